// Package localstack holds what the kit needs to install and start
// LocalStack without Docker on a team's machine, the way the repository's
// own suite does (see README.md): localstack.sh, its Lambda executor
// plugin hostexec (the functions' bootstrap runs as a process of this
// machine), the release's pip constraints, and LoopbackDynamoDB.java, the
// launcher that binds DynamoDB Local to 127.0.0.1. The command onlocalstack
// writes them out (WriteTo) and runs localstack.sh from there; a module
// cache is read-only, and a copy keeps a team's repository clean.
package localstack

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed localstack.sh docker-compose.yml requirements-runtime-*.txt LoopbackDynamoDB.java hostexec/pyproject.toml hostexec/hostexec/*.py
var files embed.FS

// LoopbackDynamoDB is the source of LoopbackDynamoDB.java (DynamoDB Local
// has no bind-address flag): the repository's emulators start it too.
//
//go:embed LoopbackDynamoDB.java
var LoopbackDynamoDB []byte

// Script is localstack.sh's path under the directory WriteTo wrote.
const Script = "localstack.sh"

// WriteTo writes the files into dir (created if missing), replacing what
// is there; localstack.sh keeps its installation's state elsewhere
// ($SQSIDEM_CACHE) and reinstalls only what changed.
func WriteTo(dir string) error {
	return fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return fmt.Errorf("localstack: %w", err)
		}
		return nil
	})
}
