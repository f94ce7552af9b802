package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Image is what Verify read back from a layout for one platform.
type Image struct {
	Platform string
	Config   ImageConfig
	Files    map[string]*tar.Header
	Binary   []byte
	CA       []byte
	Passwd   string
}

// Verify reads the OCI image layout in dir back, checks every blob against
// its digest and every promise the image makes (user, entrypoint, port,
// labels, a static binary for the platform, CA certificates, the state
// directory owned by the user), and returns the images it holds.
func Verify(dir string) ([]Image, error) {
	var top manifest
	if err := readJSON(filepath.Join(dir, "index.json"), &top); err != nil {
		return nil, err
	}
	if len(top.Manifests) != 1 {
		return nil, fmt.Errorf("index.json: %d manifests, want 1", len(top.Manifests))
	}
	descs := top.Manifests
	if descs[0].MediaType == mediaIndex {
		var idx manifest
		if err := readBlob(dir, descs[0], &idx); err != nil {
			return nil, err
		}
		descs = idx.Manifests
	}
	var images []Image
	for _, d := range descs {
		img, err := verifyOne(dir, d)
		if err != nil {
			return nil, err
		}
		images = append(images, img)
	}
	return images, nil
}

func verifyOne(dir string, d descriptor) (Image, error) {
	var img Image
	if d.MediaType != mediaManifest || d.Platform == nil {
		return img, fmt.Errorf("manifest %s: media type %q, platform %v", d.Digest, d.MediaType, d.Platform)
	}
	img.Platform = d.Platform.OS + "/" + d.Platform.Architecture
	var m manifest
	if err := readBlob(dir, d, &m); err != nil {
		return img, err
	}
	if m.Config == nil || len(m.Layers) != 1 {
		return img, fmt.Errorf("%s: want a config and one layer", img.Platform)
	}
	var cfg configFile
	if err := readBlob(dir, *m.Config, &cfg); err != nil {
		return img, err
	}
	img.Config = cfg.Config
	c := cfg.Config
	var problems []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	check(cfg.OS+"/"+cfg.Architecture == img.Platform, "config platform %s/%s", cfg.OS, cfg.Architecture)
	check(c.User == User, "user %q, want %q", c.User, User)
	check(slices.Equal(c.Entrypoint, []string{Entrypoint}), "entrypoint %q", c.Entrypoint)
	check(slices.Contains(c.Cmd, "--storage.path="+StateDir), "cmd %q", c.Cmd)
	_, port := c.ExposedPorts[Port]
	check(port, "exposed ports %v", c.ExposedPorts)
	check(slices.Contains(c.Env, "AMP_THREADS_DIR="+ThreadsDir), "env %q", c.Env)
	for _, k := range []string{"title", "source", "version", "revision", "created"} {
		check(c.Labels["org.opencontainers.image."+k] != "", "label org.opencontainers.image.%s missing", k)
	}
	raw, err := blob(dir, m.Layers[0])
	if err != nil {
		return img, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return img, fmt.Errorf("layer: %w", err)
	}
	untarred, err := io.ReadAll(zr)
	if err != nil {
		return img, fmt.Errorf("layer: %w", err)
	}
	sum := sha256.Sum256(untarred)
	check(len(cfg.RootFS.DiffIDs) == 1 && cfg.RootFS.DiffIDs[0] == "sha256:"+hex.EncodeToString(sum[:]), "diff_id %v does not match the layer", cfg.RootFS.DiffIDs)
	img.Files = map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(untarred))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return img, fmt.Errorf("layer: %w", err)
		}
		name := "/" + strings.TrimSuffix(h.Name, "/")
		img.Files[name] = h
		data, err := io.ReadAll(tr)
		if err != nil {
			return img, err
		}
		switch name {
		case Entrypoint:
			img.Binary = data
		case CAFile:
			img.CA = data
		case "/etc/passwd":
			img.Passwd = string(data)
		}
	}
	if h := img.Files[Entrypoint]; h == nil || h.Mode&0o111 == 0 {
		problems = append(problems, "no executable "+Entrypoint)
	} else if err := checkELF(img.Binary, cfg.Architecture); err != nil {
		problems = append(problems, err.Error())
	}
	check(bytes.Contains(img.CA, []byte("BEGIN CERTIFICATE")), "no CA certificates at %s", CAFile)
	check(strings.Contains(img.Passwd, ":65534:65534:"), "passwd has no user 65534")
	if h := img.Files[StateDir]; h == nil || h.Uid != 65534 || h.Typeflag != tar.TypeDir {
		problems = append(problems, StateDir+" is not a directory owned by 65534")
	}
	if len(problems) > 0 {
		return img, fmt.Errorf("%s: %s", img.Platform, strings.Join(problems, "; "))
	}
	return img, nil
}

// checkELF: a static linux binary for arch (no interpreter, so it runs on
// an empty base).
func checkELF(b []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary: %w", Entrypoint, err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		return fmt.Errorf("%s is for %v, want %s", Entrypoint, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", Entrypoint)
		}
	}
	return nil
}

func readJSON(p string, v any) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func blob(dir string, d descriptor) ([]byte, error) {
	hexSum, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		return nil, fmt.Errorf("digest %q", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexSum))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexSum || int64(len(b)) != d.Size {
		return nil, fmt.Errorf("blob %s does not match its descriptor", d.Digest)
	}
	return b, nil
}

func readBlob(dir string, d descriptor, v any) error {
	b, err := blob(dir, d)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
