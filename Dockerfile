# amp-exporter's container image: the static binary on an empty base with
# CA certificates, running as nobody (65534, the Helm chart's runAsUser).
# The same image, built without a container engine or base-image pull:
# `make image` (deploy/image). Multi-platform build and push:
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     -t ghcr.io/amp-exporter/amp-exporter:0.1.0 --push .
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG REVISION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${VERSION} -X github.com/prometheus/common/version.Revision=${REVISION} -X github.com/prometheus/common/version.Branch=main" \
      -o /out/bin/amp-exporter ./cmd/amp-exporter \
 && mkdir -p /out/var/lib/amp-exporter /out/data/amp/threads /out/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > /out/passwd \
 && printf 'root:x:0:\nnogroup:x:65534:\n' > /out/group

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=""
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build /out/bin/amp-exporter /bin/amp-exporter
COPY --from=build /out/data /data
COPY --from=build --chmod=1777 /out/tmp /tmp
COPY --from=build --chown=65534:65534 --chmod=750 /out/var/lib/amp-exporter /var/lib/amp-exporter
ENV PATH=/bin AMP_THREADS_DIR=/data/amp/threads SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.title="amp-exporter" \
      org.opencontainers.image.description="Prometheus exporter for the cost and behaviour of AI agents (Amp threads, Amp stream-json runs, Amy turn streams)" \
      org.opencontainers.image.source="https://github.com/amp-exporter/amp-exporter" \
      org.opencontainers.image.url="https://github.com/amp-exporter/amp-exporter" \
      org.opencontainers.image.documentation="https://github.com/amp-exporter/amp-exporter#readme" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
USER 65534:65534
WORKDIR /
EXPOSE 9974/tcp
VOLUME ["/var/lib/amp-exporter"]
ENTRYPOINT ["/bin/amp-exporter"]
CMD ["--storage.path=/var/lib/amp-exporter"]
