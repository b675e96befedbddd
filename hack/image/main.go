// Command apiary-image assembles Apiary's multi-arch OCI image from
// prebuilt static binaries, with no Docker daemon and no registry: a base
// layer made here (the nonroot user, CA certificates, nothing else) and one
// layer holding /manager per platform. It writes an OCI image layout and the
// same layout as one reproducible tar archive, then reads the layout back and
// validates it. Every time in the image is the given creation time, so the
// same binaries and flags always give the same digest. `make image` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// options are the command line of apiary-image.
type options struct {
	layoutDir string
	tarball   string
	repo, tag string
	created   time.Time
	version   string
	revision  string
	source    string
	licenses  string
	binaries  map[string]string // platform (os/arch) -> binary
}

// platforms returns the platforms in a fixed order, so the index is the same
// whatever the order of the flags.
func (o options) platforms() []string {
	ps := make([]string, 0, len(o.binaries))
	for p := range o.binaries {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// binaryFlag collects repeated -binary os/arch=path flags.
type binaryFlag map[string]string

func (b binaryFlag) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlag) Set(v string) error {
	p, path, ok := strings.Cut(v, "=")
	if os, arch, ok2 := strings.Cut(p, "/"); !ok || !ok2 || os == "" || arch == "" || path == "" {
		return fmt.Errorf("want os/arch=path, got %q", v)
	}
	if _, dup := b[p]; dup {
		return fmt.Errorf("platform %s given twice", p)
	}
	b[p] = path
	return nil
}

func parseFlags(args []string) (options, error) {
	o := options{binaries: map[string]string{}}
	fs := flag.NewFlagSet("apiary-image", flag.ContinueOnError)
	fs.StringVar(&o.layoutDir, "layout", "", "OCI image layout folder to write (replaced).")
	fs.StringVar(&o.tarball, "tarball", "", "The layout as one tar archive (optional).")
	fs.StringVar(&o.repo, "repository", "", "Image repository, e.g. ghcr.io/apiaryhq/apiary.")
	fs.StringVar(&o.tag, "tag", "", "Image tag.")
	epoch := fs.Int64("source-date-epoch", -1, "Creation time of everything in the image, in Unix seconds (the commit time).")
	fs.StringVar(&o.version, "version", "", "org.opencontainers.image.version.")
	fs.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (the Git commit).")
	fs.StringVar(&o.source, "source", "", "org.opencontainers.image.source (the repository URL).")
	fs.StringVar(&o.licenses, "licenses", "", "org.opencontainers.image.licenses (an SPDX expression).")
	fs.Var(binaryFlag(o.binaries), "binary", "os/arch=path of a static manager binary; repeat per platform.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for name, v := range map[string]string{"layout": o.layoutDir, "repository": o.repo, "tag": o.tag,
		"version": o.version, "revision": o.revision, "source": o.source, "licenses": o.licenses} {
		if v == "" {
			return o, fmt.Errorf("-%s is required", name)
		}
	}
	if *epoch < 0 {
		return o, fmt.Errorf("-source-date-epoch is required")
	}
	if len(o.binaries) == 0 {
		return o, fmt.Errorf("at least one -binary is required")
	}
	o.created = time.Unix(*epoch, 0).UTC()
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiary-image: %v\n", err)
		os.Exit(2)
	}
	start := time.Now()
	sum, err := build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiary-image: %v\n", err)
		os.Exit(1)
	}
	sum.print(os.Stdout, o, time.Since(start))
}
