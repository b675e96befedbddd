package kubeconfig

import (
	"go/ast"
	"go/parser"
	"go/token"

	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// TestPackageCannotOpenFiles guards "no file is opened" at the source: the
// package imports nothing that opens files, and uses nothing of clientcmd
// but Load, which only decodes (its other functions read the files a
// kubeconfig names). childcluster builds REST configs through this package.
func TestPackageCannotOpenFiles(t *testing.T) {
	forbidden := map[string]bool{"os": true, "os/exec": true, "io/ioutil": true, "io/fs": true, "path/filepath": true,
		"plugin": true, "k8s.io/client-go/tools/auth": true}
	for _, dir := range []string{".", "../childcluster"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			clientcmd := ""
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if dir == "." && forbidden[path] || strings.HasPrefix(path, "k8s.io/client-go/plugin/") {
					t.Errorf("%s imports %s", file, path)
				}
				if path == "k8s.io/client-go/tools/clientcmd" {
					clientcmd = "clientcmd"
					if imp.Name != nil {
						clientcmd = imp.Name.Name
					}
					if dir != "." {
						t.Errorf("%s imports clientcmd: parse kubeconfigs with package kubeconfig", file)
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && clientcmd != "" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == clientcmd && sel.Sel.Name != "Load" {
						t.Errorf("%s uses clientcmd.%s, which may read files", file, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// TestFIFOIsNeverOpened: opening a FIFO nobody writes to blocks, so a
// kubeconfig naming one in any file field must still be refused at once.
func TestFIFOIsNeverOpened(t *testing.T) {
	fifo := newFIFO(t)
	for name, kubeconfig := range map[string]string{
		"tokenFile":             doc(okCluster, "tokenFile: "+fifo),
		"client-certificate":    doc(okCluster, "client-certificate: "+fifo+", client-key-data: "+b64(testKey)),
		"client-key":            doc(okCluster, "client-key: "+fifo+", client-certificate-data: "+b64(testCert)),
		"certificate-authority": doc(`server: "https://child.example", certificate-authority: `+fifo, "token: abc"),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseWithin(t, []byte(kubeconfig), Options{})
			g.Expect(err).To(MatchError(ErrInvalid))
		})
	}
}

// newFIFO makes a FIFO in a temporary folder.
func newFIFO(t testing.TB) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	return fifo
}

// parseWithin runs RESTConfig, failing the test when it takes more than a
// second, as it would blocked on a FIFO or reading /dev/zero.
func parseWithin(t testing.TB, kubeconfig []byte, opts Options) (*rest.Config, error) {
	t.Helper()
	type result struct {
		cfg *rest.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := RESTConfig(kubeconfig, opts)
		done <- result{cfg, err}
	}()
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-timer.C:
		t.Fatalf("RESTConfig did not return within 1s: it opened a file the kubeconfig names")
		return nil, nil
	}
}
