module github.com/amp-exporter/amp-exporter/deploy/image

go 1.26.8
