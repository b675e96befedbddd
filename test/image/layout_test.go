// Package image opens the OCI image `make image` builds (make test builds the
// host architecture's into bin/image-host first) and checks what a cluster
// would run: the user, the entrypoint, the files (no shell), the manager
// inside running `version`, the labels, the SBOM, that a rebuild gives the
// same digest, and that the Dockerfile describes the same image. It reads
// the layout with the OCI image-spec types only, independently of the
// go-containerregistry code that wrote it, and checks every blob's digest.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// layout is an OCI image layout holding one multi-arch image.
type layout struct {
	dir   string
	ref   ocispec.Descriptor // index.json's entry: the image index
	index ocispec.Index
}

// file is one entry of an image's file system.
type file struct {
	hdr  *tar.Header
	body []byte
}

// platformImage is one platform's manifest, config and merged file system.
type platformImage struct {
	desc     ocispec.Descriptor
	manifest ocispec.Manifest
	config   ocispec.Image
	files    map[string]file // path without leading slash
}

// imageDir is where make test's image is: APIARY_IMAGE_DIR (set by the
// Makefile) or bin/image-host.
func imageDir() string {
	if d := os.Getenv("APIARY_IMAGE_DIR"); d != "" {
		return d
	}
	return filepath.Join(testenv.RepoRoot(), "bin", "image-host")
}

// openLayout reads dir/oci; a missing image fails the test with the command
// that builds it.
func openLayout(t testing.TB, dir string) *layout {
	t.Helper()
	root := filepath.Join(dir, "oci")
	top, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		t.Fatalf("no image at %s (run `make image-host`, which make test does first): %v", root, err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(top, &idx); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("index.json should point at one image index, has %+v", idx.Manifests)
	}
	l := &layout{dir: root, ref: idx.Manifests[0]}
	l.decode(t, l.ref, &l.index)
	return l
}

// blob reads a blob and checks it against the descriptor's digest and size.
func (l *layout) blob(t testing.TB, d ocispec.Descriptor) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.dir, "blobs", d.Digest.Algorithm().String(), d.Digest.Encoded()))
	if err != nil {
		t.Fatalf("blob %s: %v", d.Digest, err)
	}
	if got := fmt.Sprintf("sha256:%x", sha256.Sum256(b)); got != d.Digest.String() || int64(len(b)) != d.Size {
		t.Fatalf("blob %s has digest %s and %d bytes, descriptor says %d", d.Digest, got, len(b), d.Size)
	}
	return b
}

func (l *layout) decode(t testing.TB, d ocispec.Descriptor, into any) {
	t.Helper()
	if err := json.Unmarshal(l.blob(t, d), into); err != nil {
		t.Fatalf("decoding %s %s: %v", d.MediaType, d.Digest, err)
	}
}

// image opens the image of os/arch, its layers applied in order.
func (l *layout) image(t testing.TB, osName, arch string) *platformImage {
	t.Helper()
	for _, d := range l.index.Manifests {
		if d.Platform == nil || d.Platform.OS != osName || d.Platform.Architecture != arch {
			continue
		}
		img := &platformImage{desc: d, files: map[string]file{}}
		l.decode(t, d, &img.manifest)
		l.decode(t, img.manifest.Config, &img.config)
		if len(img.config.RootFS.DiffIDs) != len(img.manifest.Layers) {
			t.Fatalf("%s/%s: %d diff IDs for %d layers", osName, arch, len(img.config.RootFS.DiffIDs), len(img.manifest.Layers))
		}
		for i, ld := range img.manifest.Layers {
			if ld.MediaType != ocispec.MediaTypeImageLayerGzip {
				t.Fatalf("layer %d has media type %s", i, ld.MediaType)
			}
			img.apply(t, l.blob(t, ld), img.config.RootFS.DiffIDs[i].String())
		}
		return img
	}
	t.Fatalf("the image has no %s/%s manifest", osName, arch)
	return nil
}

// apply unpacks one gzipped layer, checking its uncompressed digest.
func (img *platformImage) apply(t testing.TB, gz []byte, diffID string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("layer %s: %v", diffID, err)
	}
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(zr, h))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("layer %s: %v", diffID, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("layer %s, %s: %v", diffID, hdr.Name, err)
		}
		img.files[strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")] = file{hdr: hdr, body: body}
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		t.Fatalf("layer %s: %v", diffID, err)
	}
	if got := fmt.Sprintf("sha256:%x", h.Sum(nil)); got != diffID {
		t.Fatalf("layer has diff ID %s, config says %s", got, diffID)
	}
}

// hostImage is make test's image for the machine's architecture.
func hostImage(t testing.TB) (*layout, *platformImage) {
	l := openLayout(t, imageDir())
	return l, l.image(t, "linux", runtime.GOARCH)
}

// repoOutput runs a command in the repository and returns its trimmed output.
func repoOutput(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// makeVar is what the Makefile says a variable is (make -s print-VAR).
func makeVar(t testing.TB, name string) string {
	return repoOutput(t, "make", "-s", "--no-print-directory", "print-"+name)
}
