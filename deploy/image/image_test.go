package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeELF is the smallest ELF file debug/elf reads: a 64-bit header for
// machine and, when interp, one PT_INTERP program header (a dynamically
// linked binary).
func fakeELF(machine elf.Machine, interp bool) []byte {
	var b bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: 1, Ehsize: 64, Phentsize: 56}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	if interp {
		h.Phoff, h.Phnum = 64, 1
	}
	binary.Write(&b, binary.LittleEndian, h)
	if interp {
		binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_INTERP)})
	}
	return b.Bytes()
}

func writeInputs(t *testing.T, bins map[string][]byte) Options {
	t.Helper()
	dir := t.TempDir()
	o := Options{Binaries: map[string]string{}, CAFile: filepath.Join(dir, "ca.crt"), Version: "1.2.3", Revision: "abc",
		Created: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Source: "https://example.invalid/amp-exporter", RefName: "example.invalid/amp-exporter:1.2.3"}
	if err := os.WriteFile(o.CAFile, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, b := range bins {
		f := filepath.Join(dir, strings.ReplaceAll(p, "/", "-"))
		if err := os.WriteFile(f, b, 0o755); err != nil {
			t.Fatal(err)
		}
		o.Binaries[p] = f
	}
	return o
}

func TestBuildThenVerify(t *testing.T) {
	bins := map[string][]byte{"linux/amd64": fakeELF(elf.EM_X86_64, false), "linux/arm64": fakeELF(elf.EM_AARCH64, false)}
	for _, plats := range [][]string{{"linux/amd64"}, {"linux/amd64", "linux/arm64"}} {
		t.Run(strings.Join(plats, ","), func(t *testing.T) {
			sel := map[string][]byte{}
			for _, p := range plats {
				sel[p] = bins[p]
			}
			o := writeInputs(t, sel)
			out := t.TempDir()
			if err := Build(o, out); err != nil {
				t.Fatal(err)
			}
			images, err := Verify(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(images) != len(plats) {
				t.Fatalf("%d images, want %d", len(images), len(plats))
			}
			for i, img := range images {
				if img.Platform != plats[i] || !bytes.Equal(img.Binary, bins[plats[i]]) {
					t.Errorf("image %d: platform %s, binary of %d bytes", i, img.Platform, len(img.Binary))
				}
				if got := img.Config.Labels["org.opencontainers.image.version"]; got != "1.2.3" {
					t.Errorf("version label %q", got)
				}
			}
			// Reproducible: the same inputs give the same layout.
			again := t.TempDir()
			if err := Build(o, again); err != nil {
				t.Fatal(err)
			}
			if a, b := tree(t, out), tree(t, again); a != b {
				t.Errorf("two builds differ:\n%s\n%s", a, b)
			}
			// The oci-archive holds the layout.
			if err := TarDir(out, filepath.Join(t.TempDir(), "image.tar"), o.Created); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func tree(t *testing.T, dir string) string {
	t.Helper()
	var s strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		s.WriteString(strings.TrimPrefix(p, dir) + " " + string(b[:min(len(b), 32)]) + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.String()
}

func TestVerifyCatches(t *testing.T) {
	tests := []struct {
		name   string
		bin    []byte
		mutate func(t *testing.T, dir string)
		want   string
	}{
		{"dynamic binary", fakeELF(elf.EM_X86_64, true), nil, "dynamically linked"},
		{"wrong architecture", fakeELF(elf.EM_AARCH64, false), nil, "want amd64"},
		{"not a binary", []byte("#!/bin/sh\n"), nil, "not an ELF"},
		{"tampered blob", fakeELF(elf.EM_X86_64, false), func(t *testing.T, dir string) {
			var top, m manifest
			if err := readJSON(filepath.Join(dir, "index.json"), &top); err != nil {
				t.Fatal(err)
			}
			if err := readBlob(dir, top.Manifests[0], &m); err != nil {
				t.Fatal(err)
			}
			layer := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(m.Layers[0].Digest, "sha256:"))
			if err := os.WriteFile(layer, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := writeInputs(t, map[string][]byte{"linux/amd64": tt.bin})
			out := t.TempDir()
			if err := Build(o, out); err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(t, out)
			}
			_, err := Verify(out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The Dockerfile and the Helm chart mean the same image as this builder.
func TestDockerfileAndChartAgree(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	df := read("Dockerfile")
	o := Options{Created: time.Unix(0, 0)}
	wants := []string{
		"\nFROM scratch\n",
		"\nUSER " + User + "\n",
		`ENTRYPOINT ["` + Entrypoint + `"]`,
		`CMD ["--storage.path=` + StateDir + `"]`,
		"\nEXPOSE " + Port + "\n",
		"AMP_THREADS_DIR=" + ThreadsDir,
		"SSL_CERT_FILE=" + CAFile,
		"COPY --from=build /etc/ssl/certs/ca-certificates.crt " + CAFile,
		"--chown=65534:65534 --chmod=750 /out/var/lib/amp-exporter " + StateDir,
		"CGO_ENABLED=0",
	}
	for k := range Labels(o) {
		wants = append(wants, k+"=")
	}
	for _, w := range wants {
		if !strings.Contains(df, w) {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
	values := read("deploy/helm/amp-exporter/values.yaml")
	for _, re := range []string{
		`(?m)^  repository: ghcr\.io/amp-exporter/amp-exporter$`,
		`(?m)^  runAsUser: 65534$`,
		`(?m)^  runAsGroup: 65534$`,
		`(?m)^  mountPath: ` + regexp.QuoteMeta(ThreadsDir) + `$`,
	} {
		if !regexp.MustCompile(re).MatchString(values) {
			t.Errorf("values.yaml does not match %s", re)
		}
	}
	helpers := read("deploy/helm/amp-exporter/templates/_helpers.tpl")
	if !strings.Contains(helpers, `define "amp-exporter.storagePath" -}}`+StateDir+`{{`) {
		t.Errorf("the chart's storage path is not %s", StateDir)
	}
	if !strings.Contains(read("deploy/helm/amp-exporter/templates/deployment.yaml"), "containerPort: "+strings.TrimSuffix(Port, "/tcp")) {
		t.Errorf("the chart's container port is not %s", Port)
	}
}
