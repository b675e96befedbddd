package image

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/internal/testenv"
)

func TestImageIsNamedAsTheChartPullsIt(t *testing.T) {
	l := openLayout(t, imageDir())
	image := makeVar(t, "IMAGE")
	if got := l.ref.Annotations["io.containerd.image.name"]; got != image {
		t.Errorf("layout names the image %q (what ctr import and kind load use), make says %q", got, image)
	}
	if got := l.ref.Annotations["org.opencontainers.image.ref.name"]; got != appVersion(t) {
		t.Errorf("layout tag %q, want the appVersion %q", got, appVersion(t))
	}
}

// TestImageSizes prints what the image weighs (go test -v shows it).
func TestImageSizes(t *testing.T) {
	l, img := hostImage(t)
	var total int64
	for i, d := range img.manifest.Layers {
		total += d.Size
		t.Logf("layer %d: %s compressed (%s)", i, mb(d.Size), d.Digest)
	}
	manager := int64(len(img.files["manager"].body))
	t.Logf("linux/%s image: %s compressed, /manager %s uncompressed; index %s", runtime.GOARCH, mb(total), mb(manager), l.ref.Digest)
	if total >= manager {
		t.Errorf("layers (%d bytes) are not smaller than the binary (%d): not compressed", total, manager)
	}
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// TestImageIsReproducible rebuilds the image with `make image` into another
// folder and expects the same digest and the same bytes: the binary is
// relinked, the layers recompressed, the layout and tarball rewritten.
func TestImageIsReproducible(t *testing.T) {
	first := openLayout(t, imageDir())
	dir := t.TempDir()
	start := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "image", "PLATFORMS=linux/"+runtime.GOARCH, "IMAGE_DIR="+dir)
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("rebuilt in %s:\n%s", time.Since(start).Round(time.Second), out)
	second := openLayout(t, dir)
	if first.ref.Digest != second.ref.Digest {
		t.Errorf("two builds of the same tree: index %s, then %s", first.ref.Digest, second.ref.Digest)
	}
	tag := appVersion(t)
	for _, name := range []string{
		"apiary-" + tag + ".oci.tar",
		filepath.Join("sbom", "apiary-"+tag+"-linux-"+runtime.GOARCH+".cdx.json"),
	} {
		a, b := fileSum(t, filepath.Join(imageDir(), name)), fileSum(t, filepath.Join(dir, name))
		if a != b {
			t.Errorf("%s differs between two builds: %s, then %s", name, a, b)
		}
	}
}

func fileSum(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// cdx is the part of a CycloneDX document the test reads.
type cdx struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component cdxComponent `json:"component"`
	} `json:"metadata"`
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
	// cyclonedx-gomod records the licenses it detects as evidence.
	Evidence struct {
		Licenses []struct {
			License struct {
				ID string `json:"id"`
			} `json:"license"`
		} `json:"licenses"`
	} `json:"evidence"`
}

// TestSBOMListsTheModulesInTheBinary reads the image's CycloneDX SBOM and
// expects every module linked into /manager, at the version linked.
func TestSBOMListsTheModulesInTheBinary(t *testing.T) {
	_, img := hostImage(t)
	path := filepath.Join(imageDir(), "sbom", "apiary-"+appVersion(t)+"-linux-"+runtime.GOARCH+".cdx.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no SBOM beside the image: %v", err)
	}
	var bom cdx
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/apiaryhq/apiary" ||
		bom.Metadata.Component.Version != appVersion(t) {
		t.Errorf("SBOM %s %s describes %s %s", bom.BOMFormat, bom.SpecVersion, bom.Metadata.Component.Name, bom.Metadata.Component.Version)
	}
	listed := map[string]cdxComponent{}
	for _, c := range bom.Components {
		listed[c.Name+"@"+c.Version] = c
	}
	info, err := buildinfo.ReadFile(extractManager(t, img))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if _, ok := listed[d.Path+"@"+d.Version]; !ok {
			t.Errorf("the SBOM lacks %s@%s, linked into /manager", d.Path, d.Version)
		}
	}
	unlicensed := 0
	for _, c := range bom.Components {
		if len(c.Evidence.Licenses) == 0 {
			unlicensed++
		}
	}
	if c := listed["k8s.io/client-go@"+moduleVersion(info, "k8s.io/client-go")]; len(c.Evidence.Licenses) == 0 || c.Evidence.Licenses[0].License.ID != "Apache-2.0" {
		t.Errorf("client-go's license in the SBOM: %+v, want Apache-2.0", c.Evidence.Licenses)
	}
	t.Logf("SBOM %s: CycloneDX %s, %d components for %d linked modules, %d without a detected license",
		filepath.Base(path), bom.SpecVersion, len(bom.Components), len(info.Deps), unlicensed)
}

func moduleVersion(info *buildinfo.BuildInfo, path string) string {
	for _, d := range info.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return ""
}
