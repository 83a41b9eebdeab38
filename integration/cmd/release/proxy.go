package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// buildProxy writes the published modules at version, from the working tree
// under root, into dir in the layout GOPROXY=file://dir reads:
// <escaped path>/@v/list, vX.info, vX.mod and vX.zip. The zip is what the
// tag would publish: the module's directory without its nested modules.
// It returns each zip's size, by module path.
func buildProxy(root, dir, version string, mods []tagged, now time.Time) (map[string]int64, error) {
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, now.UTC()})
	if err != nil {
		return nil, err
	}
	sizes := make(map[string]int64, len(mods))
	for _, m := range mods {
		mv := module.Version{Path: m.path(), Version: version}
		escaped, err := module.EscapePath(mv.Path)
		if err != nil {
			return nil, err
		}
		at := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return nil, err
		}
		src := filepath.Join(root, filepath.FromSlash(m.dir))
		gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
		if err != nil {
			return nil, err
		}
		files := map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
				return nil, err
			}
		}
		size, err := writeZip(filepath.Join(at, version+".zip"), mv, src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.dir, err)
		}
		sizes[mv.Path] = size
	}
	return sizes, nil
}

func writeZip(name string, mv module.Version, src string) (int64, error) {
	f, err := os.Create(name)
	if err != nil {
		return 0, err
	}
	if err := zip.CreateFromDir(f, mv, src); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

// evict removes the published modules at version from the module cache
// (gomodcache): the go command takes a version it has in its cache without
// asking the proxy, so a copy from an earlier run (another working tree) would
// be checked instead of this one, and one left behind would later stand in
// for the real release. It returns how many entries it removed.
func evict(gomodcache, version string, mods []tagged) (int, error) {
	n := 0
	for _, m := range mods {
		escaped, err := module.EscapePath(m.path())
		if err != nil {
			return n, err
		}
		extracted := filepath.Join(gomodcache, filepath.FromSlash(escaped)+"@"+version)
		if _, err := os.Stat(extracted); err == nil {
			// The cache's directories are read-only.
			err := filepath.WalkDir(extracted, func(p string, e fs.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					err = os.Chmod(p, 0o755)
				}
				return err
			})
			if err != nil {
				return n, err
			}
			if err := os.RemoveAll(extracted); err != nil {
				return n, err
			}
			n++
		}
		at := filepath.Join(gomodcache, "cache", "download", filepath.FromSlash(escaped), "@v")
		downloads, err := filepath.Glob(filepath.Join(at, version+".*"))
		if err != nil {
			return n, err
		}
		for _, d := range downloads {
			if err := os.Remove(d); err != nil {
				return n, err
			}
			n++
		}
		// The cache's list of the versions it has seen names it too.
		removed, err := dropLine(filepath.Join(at, "list"), version)
		if err != nil {
			return n, err
		}
		if removed {
			n++
		}
		removeEmpty(filepath.Dir(extracted), gomodcache)
		removeEmpty(at, gomodcache)
	}
	return n, nil
}

// removeEmpty removes dir and its parents below top while they are empty.
func removeEmpty(dir, top string) {
	for ; strings.HasPrefix(dir, top+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return // not empty
		}
	}
}

// dropLine removes the line from the file, and the file once empty; a
// missing file has no line.
func dropLine(name, line string) (bool, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	kept := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.TrimSpace(l) == line })
	switch {
	case len(kept) == len(lines):
		return false, nil
	case len(kept) == 0:
		return true, os.Remove(name)
	}
	return true, os.WriteFile(name, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
}
