package ampserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/amp-exporter/amp-exporter/internal/regfile"
)

// Storing a refreshed login in secrets.json. The issuer has rotated the
// refresh token by the time the new one is stored, so a store that fails
// loses the CLI's login: the folder is checked before a refresh with the
// same operations the store will use, and a store that fails anyway
// falls back to the next way rather than dropping the tokens:
//
//  1. replace the file atomically (a temporary file beside it, renamed
//     over it), as the CLI does;
//  2. where the file cannot be replaced — it is a mount point of its own
//     (a container's `-v file:file`, a Kubernetes subPath: the rename
//     fails with EBUSY), or the rename failed for another reason — write
//     it in place: same inode, so its owner and mode stay;
//  3. where neither works, the caller keeps the tokens in memory.

// errChangedMeanwhile: the file to replace changed while its replacement
// was written.
var errChangedMeanwhile = errors.New("changed meanwhile")

// errSuperseded: the stored login is no longer the one a write was meant
// to replace (another process stored a newer one).
var errSuperseded = errors.New("the stored login changed meanwhile")

// storeLogin writes a refreshed login into secrets.json: the file is read
// again right before (the CLI may have changed other entries), only the
// two entries of this login change. Both entries go in one write, refresh
// token first, as the CLI's own file store does (its setMany): a reader
// never sees the new refresh token beside an access token older than it.
// Writing and flushing takes a while; when secrets.json changed meanwhile
// (a CLI process wrote it), the change is merged in again before the
// write, so the CLI's write is kept. over, when set, is asked about the
// refresh token stored right before the write: a write it does not allow
// is not made (errSuperseded).
func storeLogin(path, url, refresh, access string, over func(stored string) bool) error {
	target := resolved(path)
	raw, err := regfile.ReadFile(target, maxKeyFile)
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	inPlace := !replaceable(target)
	var replaceErr error
	for try := 1; ; try++ {
		m, err := parseSecrets(target, raw)
		if err != nil {
			return err
		}
		if over != nil && !over(m.str("oauth-refresh-token", url)) {
			return errSuperseded
		}
		set := func(name, v string) error {
			b, err := json.Marshal(v)
			m[name+"@"+url] = b
			return err
		}
		if err := set("oauth-refresh-token", refresh); err != nil {
			return err
		}
		if err := set("apiKey", access); err != nil {
			return err
		}
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return fmt.Errorf("amp secrets: %w", err)
		}
		unchanged := func() bool {
			now, err := regfile.ReadFile(target, maxKeyFile)
			if err != nil || bytes.Equal(now, raw) || try == 3 {
				return true
			}
			raw = now
			return false
		}
		if !inPlace {
			err = replaceFile(target, data, unchanged)
			if err != nil && !errors.Is(err, errChangedMeanwhile) {
				// The tokens must land somewhere: the same file, in place.
				replaceErr, inPlace = err, true
				err = writeInPlace(target, data, unchanged)
			}
		} else {
			err = writeInPlace(target, data, unchanged)
		}
		if errors.Is(err, errChangedMeanwhile) {
			continue
		}
		if err != nil && replaceErr != nil {
			return fmt.Errorf("%w; writing it in place: %w", replaceErr, err)
		}
		return err
	}
}

// resolved is secrets.json through its symbolic links: a symlinked file
// stays a symlink, its target is written.
func resolved(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// writable checks, before a refresh, that a refreshed login could be
// stored: with the operations storeLogin will use. A file that can be
// replaced needs a temporary file in its folder that can be given its
// owner; one that cannot (a mount point of its own) or whose folder
// cannot take that file is written in place, so it must open for
// writing.
func writable(path string) error {
	target := resolved(path)
	var err error
	if replaceable(target) {
		var f *os.File
		f, err = createTemp(filepath.Dir(target), ".amp-exporter-secrets-*")
		if err == nil {
			// The new file must also be able to keep the old one's owner.
			err = keepOwner(f, target)
			name := f.Name()
			f.Close()
			_ = os.Remove(name)
		}
	} else {
		err = errors.New("it is a mount point of its own (a bind-mounted file), so it can only be written in place")
	}
	if err != nil {
		if inPlaceErr := openInPlace(target); inPlaceErr != nil {
			return fmt.Errorf("cannot write %q (replacing it: %w; in place: %w), so a refreshed login could not be stored (the issuer would have replaced the CLI's refresh token): not refreshing, the stored token is used while it is valid; make it writable (mount its folder rather than the file), or put an access token from the Amp settings page in amp_server.api_key_file",
				path, err, inPlaceErr)
		}
	}
	return nil
}

// openInPlace checks that target can be written in place (and is not a
// file the CLI has replaced since it was mounted: nobody would read it).
func openInPlace(target string) error {
	f, err := openFile(target, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return unlinked(f)
}

// beforeReplace, when set, runs between the new secrets.json being written
// and it replacing the old one (tests write the file there as a CLI
// process would).
var beforeReplace func()

// createTemp is os.CreateTemp, rename os.Rename and openFile os.OpenFile
// (tests make each fail).
var (
	createTemp = os.CreateTemp
	rename     = os.Rename
	openFile   = os.OpenFile
)

// replaceFile replaces target with data atomically. Right before the
// rename, unchanged reports whether target may be replaced; when it says
// no, nothing is replaced and the error is errChangedMeanwhile.
func replaceFile(target string, data []byte, unchanged func() bool) (err error) {
	dir := filepath.Dir(target)
	f, err := createTemp(dir, ".amp-exporter-secrets-*")
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		f.Close()
		return fmt.Errorf("amp secrets: %w", err)
	}
	if err := keepOwner(f, target); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("amp secrets: write %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("amp secrets: sync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	if beforeReplace != nil {
		beforeReplace()
	}
	if !unchanged() {
		return errChangedMeanwhile
	}
	if err := rename(tmp, target); err != nil {
		return fmt.Errorf("amp secrets: replace %q: %w", target, err)
	}
	syncDir(dir)
	return nil
}

// writeInPlace overwrites target with data: the same file, so its owner,
// mode and any mount over it stay. A shorter content is padded with
// spaces to the old length (JSON allows them after the value), so no
// reader ever sees the end of the old content after the new one, as it
// could between a write and a truncate. Right before the write,
// unchanged reports whether target may be written (errChangedMeanwhile
// otherwise).
func writeInPlace(target string, data []byte, unchanged func() bool) error {
	f, err := openFile(target, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	defer f.Close()
	if err := unlinked(f); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	if pad := fi.Size() - int64(len(data)); pad > 0 {
		data = append(data, bytes.Repeat([]byte{' '}, int(pad))...)
	}
	if beforeReplace != nil {
		beforeReplace()
	}
	if !unchanged() {
		return errChangedMeanwhile
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("amp secrets: write %q in place: %w", target, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("amp secrets: sync %q: %w", target, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("amp secrets: %w", err)
	}
	return nil
}
