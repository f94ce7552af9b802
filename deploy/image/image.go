// Command ociimage builds amp-exporter's container image without a
// container engine and without pulling a base image: one layer holding the
// static binary, CA certificates and a passwd/group with the unprivileged
// user, written as an OCI image layout (and optionally an oci-archive tar
// of it, which podman load and skopeo copy read). With several -binary
// flags the layout holds a multi-platform image index.
//
// The image means the same as the Dockerfile at the repository root (a
// test holds the two to the same user, entrypoint, port and paths).
//
//	go run . -binary linux/amd64=../../dist/amp-exporter \
//	    -version 0.1.0 -revision $(git rev-parse HEAD) -out ../../dist/image -tar ../../dist/image.oci.tar
//	go run . verify ../../dist/image
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// What the image promises; the Dockerfile says the same.
const (
	User       = "65534:65534" // nobody, the chart's runAsUser/runAsGroup
	Entrypoint = "/bin/amp-exporter"
	StateDir   = "/var/lib/amp-exporter" // the chart's --storage.path
	ThreadsDir = "/data/amp/threads"     // the chart's threads.mountPath
	Port       = "9974/tcp"
	CAFile     = "/etc/ssl/certs/ca-certificates.crt"
)

const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        *descriptor       `json:"config,omitempty"`
	Layers        []descriptor      `json:"layers,omitempty"`
	Manifests     []descriptor      `json:"manifests,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// ImageConfig is the part of the OCI image configuration a runtime uses.
type ImageConfig struct {
	User         string              `json:"User"`
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd"`
	Env          []string            `json:"Env"`
	WorkingDir   string              `json:"WorkingDir"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Volumes      map[string]struct{} `json:"Volumes"`
	Labels       map[string]string   `json:"Labels"`
}

type configFile struct {
	Created      string      `json:"created"`
	Architecture string      `json:"architecture"`
	OS           string      `json:"os"`
	Variant      string      `json:"variant,omitempty"`
	Config       ImageConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
		Comment   string `json:"comment,omitempty"`
	} `json:"history"`
}

// Options is one image build.
type Options struct {
	Binaries map[string]string // "linux/amd64" → path of a static binary
	CAFile   string            // PEM bundle copied to CAFile
	Version  string
	Revision string
	Created  time.Time // also every file's mtime, so builds are reproducible
	Source   string    // repository URL for the labels
	RefName  string    // name:tag recorded in the layout's index.json
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "verify" {
		images, err := Verify(os.Args[2])
		if err != nil {
			fatal(err)
		}
		for _, img := range images {
			fmt.Printf("ok %s: user %s, entrypoint %v, %d-byte static binary, CA bundle %d bytes, version label %q\n",
				img.Platform, img.Config.User, img.Config.Entrypoint, len(img.Binary), len(img.CA), img.Config.Labels["org.opencontainers.image.version"])
		}
		return
	}
	var o Options
	bins := map[string]string{}
	flag.Func("binary", "os/arch=path of a static amp-exporter binary (repeatable)", func(s string) error {
		p, file, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(p, "linux/") {
			return fmt.Errorf("want linux/<arch>=<path>, got %q", s)
		}
		bins[p] = file
		return nil
	})
	flag.StringVar(&o.CAFile, "ca", "/etc/ssl/certs/ca-certificates.crt", "CA certificate bundle to include")
	flag.StringVar(&o.Version, "version", "dev", "version for the labels and the tag")
	flag.StringVar(&o.Revision, "revision", "unknown", "source revision for the labels")
	repo := flag.String("repository", "ghcr.io/amp-exporter/amp-exporter", "image name the layout's tag is recorded under")
	flag.StringVar(&o.Source, "source", "https://github.com/amp-exporter/amp-exporter", "repository URL for the labels")
	created := flag.String("created", "", "creation time, RFC 3339 (default: $SOURCE_DATE_EPOCH, else now)")
	out := flag.String("out", "", "directory to write the OCI image layout into (required)")
	tarOut := flag.String("tar", "", "also write the layout as an oci-archive tar here")
	flag.Parse()
	o.Binaries = bins
	o.RefName = *repo + ":" + o.Version
	var err error
	if o.Created, err = createdTime(*created, os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		fatal(err)
	}
	if *out == "" || len(bins) == 0 {
		fatal(errors.New("need -out and at least one -binary"))
	}
	if err := Build(o, *out); err != nil {
		fatal(err)
	}
	if *tarOut != "" {
		if err := TarDir(*out, *tarOut, o.Created); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "ociimage:", err)
	os.Exit(1)
}

func createdTime(flagValue, epoch string) (time.Time, error) {
	switch {
	case flagValue != "":
		return time.Parse(time.RFC3339, flagValue)
	case epoch != "":
		var s int64
		if _, err := fmt.Sscan(epoch, &s); err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", epoch, err)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	return time.Now().UTC().Truncate(time.Second), nil
}

// Labels are the OCI annotations the image carries.
func Labels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":         "amp-exporter",
		"org.opencontainers.image.description":   "Prometheus exporter for the cost and behaviour of AI agents (Amp threads, Amp stream-json runs, Amy turn streams)",
		"org.opencontainers.image.source":        o.Source,
		"org.opencontainers.image.url":           o.Source,
		"org.opencontainers.image.documentation": o.Source + "#readme",
		"org.opencontainers.image.version":       o.Version,
		"org.opencontainers.image.revision":      o.Revision,
		"org.opencontainers.image.created":       o.Created.Format(time.RFC3339),
	}
}

// Build writes the OCI image layout for o into dir.
func Build(o Options, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	ca, err := os.ReadFile(o.CAFile)
	if err != nil {
		return fmt.Errorf("CA certificates: %w", err)
	}
	plats := make([]string, 0, len(o.Binaries))
	for p := range o.Binaries {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	var manifests []descriptor
	for _, p := range plats {
		bin, err := os.ReadFile(o.Binaries[p])
		if err != nil {
			return fmt.Errorf("binary for %s: %w", p, err)
		}
		d, err := buildOne(o, dir, p, bin, ca)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		manifests = append(manifests, d)
	}
	top := manifests[0]
	if len(manifests) > 1 {
		idx := manifest{SchemaVersion: 2, MediaType: mediaIndex, Manifests: manifests, Annotations: Labels(o)}
		if top, err = writeJSON(dir, mediaIndex, idx); err != nil {
			return err
		}
	}
	top.Annotations = map[string]string{"org.opencontainers.image.ref.name": o.RefName}
	layout := manifest{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{top}}
	b, err := json.MarshalIndent(layout, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

func buildOne(o Options, dir, plat string, bin, ca []byte) (descriptor, error) {
	_, arch, _ := strings.Cut(plat, "/")
	arch, variant, _ := strings.Cut(arch, "/")
	if variant == "" && arch == "arm64" {
		variant = "v8"
	}
	layer, diffID, err := Layer(bin, ca, o.Created)
	if err != nil {
		return descriptor{}, err
	}
	ld, err := writeBlob(dir, mediaLayer, layer)
	if err != nil {
		return descriptor{}, err
	}
	var cfg configFile
	cfg.Created = o.Created.Format(time.RFC3339)
	cfg.Architecture, cfg.OS, cfg.Variant = arch, "linux", variant
	cfg.Config = ImageConfig{
		User:       User,
		Entrypoint: []string{Entrypoint},
		Cmd:        []string{"--storage.path=" + StateDir},
		Env: []string{
			"PATH=/bin",
			"AMP_THREADS_DIR=" + ThreadsDir,
			"SSL_CERT_FILE=" + CAFile,
		},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{Port: {}},
		Volumes:      map[string]struct{}{StateDir: {}},
		Labels:       Labels(o),
	}
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{diffID}
	cfg.History = append(cfg.History, struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
		Comment   string `json:"comment,omitempty"`
	}{cfg.Created, "deploy/image (ociimage)", "amp-exporter " + o.Version + ", CA certificates, passwd"})
	cd, err := writeJSON(dir, mediaConfig, cfg)
	if err != nil {
		return descriptor{}, err
	}
	m := manifest{SchemaVersion: 2, MediaType: mediaManifest, Config: &cd, Layers: []descriptor{ld}, Annotations: Labels(o)}
	md, err := writeJSON(dir, mediaManifest, m)
	if err != nil {
		return descriptor{}, err
	}
	md.Platform = &platform{Architecture: arch, OS: "linux", Variant: variant}
	return md, nil
}

// Layer returns the image's one layer, gzipped, and the digest of the
// uncompressed tar (its diff_id). Entries are in a fixed order with fixed
// times and owners, so the same inputs give the same bytes.
func Layer(bin, ca []byte, mtime time.Time) ([]byte, string, error) {
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     []byte
		dir      bool
	}
	entries := []entry{
		{name: "bin/", mode: 0o755, dir: true},
		{name: "bin/amp-exporter", mode: 0o755, data: bin},
		{name: "data/", mode: 0o755, dir: true},
		{name: "data/amp/", mode: 0o755, dir: true},
		{name: "data/amp/threads/", mode: 0o755, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "var/", mode: 0o755, dir: true},
		{name: "var/lib/", mode: 0o755, dir: true},
		{name: "var/lib/amp-exporter/", mode: 0o750, uid: 65534, gid: 65534, dir: true},
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

func writeJSON(dir, mediaType string, v any) (descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return writeBlob(dir, mediaType, b)
}

func writeBlob(dir, mediaType string, b []byte) (descriptor, error) {
	sum := sha256.Sum256(b)
	hexSum := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", hexSum), b, 0o644); err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(b))}, nil
}

// TarDir writes the files under dir into a tar at dst (an oci-archive when
// dir is an OCI layout), in name order with fixed times.
func TarDir(dir, dst string, mtime time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range names {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: path.Clean(filepath.ToSlash(rel)), Mode: 0o644, ModTime: mtime, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, bytes.NewReader(data)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
