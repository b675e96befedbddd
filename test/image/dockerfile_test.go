package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM and the instructions after it.
type stage struct {
	from string // the FROM arguments
	ins  []instruction
}

// parseDockerfile splits a Dockerfile into its global ARGs and stages. It
// knows only what this repository's Dockerfile uses: comments, line
// continuations and one instruction per logical line.
func parseDockerfile(t *testing.T, text string) (global []instruction, stages []stage) {
	t.Helper()
	var logical []string
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		logical = append(logical, cur+trimmed)
		cur = ""
	}
	if cur != "" {
		t.Fatalf("Dockerfile ends in a line continuation: %q", cur)
	}
	for _, l := range logical {
		cmd, args, _ := strings.Cut(l, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " ")}
		switch {
		case in.cmd == "FROM":
			stages = append(stages, stage{from: in.args})
		case len(stages) == 0:
			global = append(global, in)
		default:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	return global, stages
}

func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// last is the stage's last cmd, which is the one that takes effect.
func (s stage) last(t *testing.T, cmd string) string {
	t.Helper()
	all := s.all(cmd)
	if len(all) == 0 {
		t.Fatalf("stage %q has no %s", s.from, cmd)
	}
	return all[len(all)-1]
}

// TestDockerfileDescribesTheSameImage checks, without Docker, that the
// Dockerfile builds what make image builds: the manager from the Makefile's
// own target (so the same flags) with the toolchain of this machine, as
// /manager on a distroless static nonroot base, run as the same user with
// the same entrypoint and labels as the image make test built.
func TestDockerfileDescribesTheSameImage(t *testing.T) {
	root := testenv.RepoRoot()
	text, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	global, stages := parseDockerfile(t, string(text))
	if len(stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, want a builder and the final image", len(stages))
	}
	build, final := stages[0], stages[1]

	goVersion := ""
	for _, in := range global {
		if v, ok := strings.CutPrefix(in.args, "GO_VERSION="); in.cmd == "ARG" && ok {
			goVersion = v
		}
	}
	// The same Go release, or the two binaries differ; a patch release apart
	// they differ only in the runtime, which is worth a note, not a failure.
	if minor(goVersion) != minor(strings.TrimPrefix(runtime.Version(), "go")) {
		t.Errorf("Dockerfile's GO_VERSION %q; make builds with %s", goVersion, runtime.Version())
	} else if "go"+goVersion != runtime.Version() {
		t.Logf("Dockerfile's GO_VERSION %s, this machine's Go %s: the binaries differ in the runtime", goVersion, runtime.Version())
	}
	if m := regexp.MustCompile(`^--platform=\$BUILDPLATFORM golang:\$\{GO_VERSION\}(-\S+)? AS (\S+)$`).FindStringSubmatch(build.from); m == nil {
		t.Errorf("builder stage FROM %q, want a golang:${GO_VERSION} image on the build platform (cross-compiling)", build.from)
	}
	run := strings.Join(build.all("RUN"), "\n")
	for _, want := range []string{"make binary", "BINARY_OS=${TARGETOS}", "BINARY_ARCH=${TARGETARCH}", "BINARY_OUT=/out/manager",
		"COMMIT=${COMMIT}", "SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}"} {
		if !strings.Contains(run, want) {
			t.Errorf("the builder's RUN lacks %q: the binary must come from the Makefile's binary target\n%s", want, run)
		}
	}
	// What `make binary` runs for the Dockerfile's arguments: the release
	// flags the image test checks in the built binary.
	dry := repoOutput(t, "make", "-n", "--no-print-directory", "binary", "BINARY_OS=linux", "BINARY_ARCH=arm64", "BINARY_OUT=/out/manager")
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "-trimpath", "-buildvcs=false", "-ldflags '-s -w ", "-o /out/manager"} {
		if !strings.Contains(dry, want) {
			t.Errorf("make binary runs %q, lacking %q", dry, want)
		}
	}

	if final.from != "gcr.io/distroless/static:nonroot" {
		t.Errorf("final stage FROM %q, want gcr.io/distroless/static:nonroot", final.from)
	}
	if got := final.all("COPY"); !slices.Equal(got, []string{"--from=build " + "/out/manager " + entrypoint}) {
		t.Errorf("final stage COPY %q, want only the manager to %s", got, entrypoint)
	}
	if slices.ContainsFunc(final.ins, func(in instruction) bool { return in.cmd == "RUN" || in.cmd == "ADD" }) {
		t.Error("the final stage runs or adds something: it must hold only the base and the manager")
	}

	_, img := hostImage(t)
	cfg := img.config.Config
	if got := final.last(t, "USER"); got != cfg.User {
		t.Errorf("Dockerfile USER %q, make's image runs as %q", got, cfg.User)
	}
	if got := final.last(t, "WORKDIR"); got != cfg.WorkingDir {
		t.Errorf("Dockerfile WORKDIR %q, make's image %q", got, cfg.WorkingDir)
	}
	var ep []string
	if err := json.Unmarshal([]byte(final.last(t, "ENTRYPOINT")), &ep); err != nil || !slices.Equal(ep, cfg.Entrypoint) {
		t.Errorf("Dockerfile ENTRYPOINT %v (%v), make's image %q", ep, err, cfg.Entrypoint)
	}
	labels := strings.Join(final.all("LABEL"), " ")
	for _, k := range []string{"org.opencontainers.image.source", "org.opencontainers.image.licenses", "org.opencontainers.image.title"} {
		if want := k + `="` + cfg.Labels[k] + `"`; !strings.Contains(labels, want) {
			t.Errorf("Dockerfile LABEL lacks %s (make's image has it)", want)
		}
	}
}

// minor is the Go release of a version: 1.26 for 1.26.8.
func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
