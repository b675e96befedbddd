package image

import (
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/apiaryhq/apiary/internal/testenv"
)

const (
	nonroot    = "65532"
	entrypoint = "/manager"
	source     = "https://github.com/apiaryhq/apiary"
)

// appVersion is the chart's appVersion, the one source of the version.
func appVersion(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "charts", "apiary", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", c.AppVersion, err)
	}
	return c.AppVersion
}

// commitTime is HEAD's commit time, the image's creation time.
func commitTime(t testing.TB) time.Time {
	s, err := strconv.ParseInt(repoOutput(t, "git", "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(s, 0).UTC()
}

func TestImageRunsTheManagerAsNonroot(t *testing.T) {
	l, img := hostImage(t)
	c := img.config
	if c.OS != "linux" || c.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s", c.OS, c.Architecture)
	}
	if c.Config.User != nonroot+":"+nonroot {
		t.Errorf("user %q, want %s:%s", c.Config.User, nonroot, nonroot)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{entrypoint}) || len(c.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [%s] and no cmd (the chart passes only args)", c.Config.Entrypoint, c.Config.Cmd, entrypoint)
	}
	if !slices.Contains(c.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %q lacks SSL_CERT_FILE", c.Config.Env)
	}
	created := commitTime(t)
	if c.Created == nil || !c.Created.Equal(created) {
		t.Errorf("created %v, want the commit time %v", c.Created, created)
	}
	for _, h := range c.History {
		if h.Created == nil || !h.Created.Equal(created) {
			t.Errorf("history %q created %v, want %v", h.CreatedBy, h.Created, created)
		}
	}
	head := repoOutput(t, "git", "rev-parse", "HEAD")
	want := map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  appVersion(t),
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
	}
	for _, labels := range []map[string]string{c.Config.Labels, img.manifest.Annotations, l.index.Annotations} {
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("%s = %q, want %q", k, labels[k], v)
			}
		}
		if rev := labels["org.opencontainers.image.revision"]; rev != head && rev != head+"-dirty" {
			t.Errorf("revision %q, want HEAD %s", rev, head)
		}
	}
	license, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "LICENSE"))
	if err != nil || !strings.Contains(string(license), "Apache License\n                           Version 2.0") {
		t.Errorf("the licenses label says Apache-2.0 but LICENSE is not the Apache License 2.0 (%v)", err)
	}
}

func TestImageHoldsOnlyTheBaseAndTheManager(t *testing.T) {
	_, img := hostImage(t)
	var paths []string
	for p := range img.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	want := []string{"etc", "etc/group", "etc/nsswitch.conf", "etc/passwd", "etc/ssl", "etc/ssl/certs",
		"etc/ssl/certs/ca-certificates.crt", "home", "home/nonroot", "manager", "tmp"}
	if !slices.Equal(paths, want) {
		t.Errorf("files in the image:\n  %s\nwant only:\n  %s", strings.Join(paths, "\n  "), strings.Join(want, "\n  "))
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/ash", "bin/busybox", "usr/bin/env", "sbin/nologin"} {
		if _, ok := img.files[shell]; ok {
			t.Errorf("the image holds /%s", shell)
		}
	}

	passwd := string(img.files["etc/passwd"].body)
	if !slices.Contains(strings.Split(passwd, "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin") {
		t.Errorf("/etc/passwd has no nonroot entry for %s:\n%s", nonroot, passwd)
	}
	if g := string(img.files["etc/group"].body); !strings.Contains(g, "nonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot group:\n%s", g)
	}
	if home := img.files["home/nonroot"].hdr; home == nil || !home.FileInfo().IsDir() || home.Uid != 65532 || home.Mode&0o777 != 0o700 {
		t.Errorf("/home/nonroot: %+v, want a 0700 folder owned by 65532", home)
	}
	if tmp := img.files["tmp"].hdr; tmp == nil || tmp.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp: %+v, want mode 1777 (client-go and git write there)", tmp)
	}
	m := img.files["manager"].hdr
	if m == nil || !m.FileInfo().Mode().IsRegular() || m.Mode&0o777 != 0o755 || m.Uid != 0 {
		t.Errorf("/manager: %+v, want a root-owned 0755 file", m)
	}

	certs := img.files["etc/ssl/certs/ca-certificates.crt"].body
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certs) {
		t.Fatal("the CA bundle holds no certificate")
	}
	n := strings.Count(string(certs), "-----BEGIN CERTIFICATE-----")
	if n < 100 {
		t.Errorf("the CA bundle holds %d certificates; a public root store has over 100", n)
	}
	t.Logf("CA bundle: %d certificates, %d bytes", n, len(certs))
}

// extractManager writes the image's /manager to a temporary file.
func extractManager(t *testing.T, img *platformImage) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(path, img.files["manager"].body, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestManagerInTheImageRunsVersion(t *testing.T) {
	_, img := hostImage(t)
	bin := extractManager(t, img)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("/manager version: %v\n%s", err, out)
	}
	t.Logf("/manager version:\n%s", out)
	labels := img.config.Config.Labels
	want := []string{
		"apiary " + appVersion(t),
		"commit: " + labels["org.opencontainers.image.revision"],
		"built: " + commitTime(t).Format(time.RFC3339),
		"go: " + runtime.Version(),
		"platform: linux/" + runtime.GOARCH,
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); !slices.Equal(got, want) {
		t.Errorf("/manager version printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestManagerIsStaticStrippedAndTrimmed(t *testing.T) {
	_, img := hostImage(t)
	bin := extractManager(t, img)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/manager has an ELF interpreter: it is dynamically linked and needs a libc the image lacks")
		}
	}
	for _, s := range []string{".symtab", ".debug_info", ".zdebug_info"} {
		if f.Section(s) != nil {
			t.Errorf("/manager has a %s section: not built with -ldflags \"-s -w\"", s)
		}
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if info.Path != "github.com/apiaryhq/apiary" || info.GoVersion != runtime.Version() {
		t.Errorf("/manager is %s built with %s", info.Path, info.GoVersion)
	}
	for k, v := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": runtime.GOARCH} {
		if settings[k] != v {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], v)
		}
	}
	// Go records no -ldflags with -trimpath: the sections above show -s -w,
	// TestManagerInTheImageRunsVersion the -X stamps.
	if _, ok := settings["vcs.revision"]; ok {
		t.Error("/manager embeds VCS stamps (-buildvcs): the binary would differ with the checkout's state")
	}
}
