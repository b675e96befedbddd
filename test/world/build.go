package world

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// BinaryEnv names a manager binary to run instead of building this
// repository's: it lets a suite run against another build, such as an older
// commit's, to show what that build gets wrong.
const BinaryEnv = "APIARY_MANAGER_BINARY"

// Build is how the manager's binary is built.
type Build int

const (
	// NoBuild builds no binary.
	NoBuild Build = iota
	// Debug is `go build`, as developers run it.
	Debug
	// Release is built as the image's binary is (static, trimmed,
	// stripped), so that its pages in the resident set are the shipped
	// binary's.
	Release
)

// Wanted says whether a binary is built.
func (b Build) Wanted() bool { return b != NoBuild }

// BuildManager builds the apiary binary of this repository into dir (as a
// Debug build unless b is Release), or returns the binary BinaryEnv names.
// It is the one place the tests build the manager.
func BuildManager(dir string, b Build) (string, error) {
	if binary := os.Getenv(BinaryEnv); binary != "" {
		return binary, nil
	}
	binary := filepath.Join(dir, "apiary")
	args := []string{"build", "-o", binary, "."}
	env := os.Environ()
	if b == Release {
		args = []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "."}
		env = append(env, "CGO_ENABLED=0")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = testenv.RepoRoot(), env
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w: %s", err, out)
	}
	return binary, nil
}
