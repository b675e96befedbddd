package render

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

const testChart = "apiVersion: v2\nname: test\nversion: 0.1.0\n"

// loadTest loads a bundle from files; Chart.yaml is added when missing.
func loadTest(t *testing.T, files map[string]string) *Bundle {
	t.Helper()
	b, err := loadTestErr(files)
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	return b
}

func loadTestErr(files map[string]string) (*Bundle, error) {
	data := map[string][]byte{}
	for k, v := range files {
		data[k] = []byte(v)
	}
	if _, ok := data["Chart.yaml"]; !ok {
		data["Chart.yaml"] = []byte(testChart)
	}
	return LoadFiles("test", data)
}

// renderAny renders b without confining its output, for tests of the
// rendering itself.
func renderAny(b *Bundle, req Request) (*Output, error) {
	out, _, err := b.renderObjects(context.Background(), req)
	return out, err
}

// renderErr expects an *Error and returns it.
func asRenderError(g Gomega, err error) *Error {
	var rerr *Error
	g.ExpectWithOffset(1, errors.As(err, &rerr)).To(BeTrue(), "want *render.Error, got %v", err)
	return rerr
}

// kindNames lists "Kind/namespace/name" of the objects, in order.
func kindNames(out *Output) []string {
	var l []string
	for _, o := range out.Objects {
		l = append(l, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return l
}
