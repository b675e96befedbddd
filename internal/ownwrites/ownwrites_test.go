package ownwrites

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cm(uid, rv, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}, Data: map[string]string{"v": v}}
}

func TestLatest(t *testing.T) {
	tests := []struct {
		name    string
		written *corev1.ConfigMap
		cached  *corev1.ConfigMap
		age     time.Duration
		want    string
		kept    int
	}{
		{name: "nothing written", cached: cm("a", "5", "cache"), want: "cache"},
		{name: "cache older than the write", written: cm("a", "7", "write"), cached: cm("a", "5", "cache"), want: "write", kept: 1},
		{name: "cache at the write", written: cm("a", "7", "write"), cached: cm("a", "7", "cache"), want: "cache"},
		{name: "cache newer than the write", written: cm("a", "7", "write"), cached: cm("a", "9", "cache"), want: "cache"},
		{name: "another object written", written: cm("b", "9", "write"), cached: cm("a", "5", "cache"), want: "cache", kept: 1},
		{name: "write expired", written: cm("a", "7", "write"), cached: cm("a", "5", "cache"), age: time.Minute, want: "cache"},
		{name: "versions that do not parse", written: cm("a", "x7", "write"), cached: cm("a", "x5", "cache"), want: "cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			clock := time.Unix(1000, 0)
			m := New[*corev1.ConfigMap](10 * time.Second)
			m.now = func() time.Time { return clock }
			if tt.written != nil {
				m.Remember(tt.written)
			}
			clock = clock.Add(tt.age)
			got := m.Latest(tt.cached)
			g.Expect(got.Data["v"]).To(Equal(tt.want))
			g.Expect(m.Len()).To(Equal(tt.kept))
		})
	}
}

func TestLatestHandsOutCopies(t *testing.T) {
	g := NewWithT(t)
	m := New[*corev1.ConfigMap](0)
	m.Remember(cm("a", "7", "write"))
	got := m.Latest(cm("a", "5", "cache"))
	got.Data["v"] = "changed by the reconciler"
	g.Expect(m.Latest(cm("a", "5", "cache")).Data["v"]).To(Equal("write"))
}

func TestRememberSweepsExpiredWrites(t *testing.T) {
	g := NewWithT(t)
	clock := time.Unix(1000, 0)
	m := New[*corev1.ConfigMap](10 * time.Second)
	m.now = func() time.Time { return clock }
	for _, uid := range []string{"a", "b", "c"} {
		m.Remember(cm(uid, "7", "write"))
	}
	clock = clock.Add(11 * time.Second)
	m.Remember(cm("d", "8", "write"))
	g.Expect(m.Len()).To(Equal(1), "only the write of the last ten seconds is kept")
	m.Forget("d")
	g.Expect(m.Len()).To(BeZero())
}

func TestNewer(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"8", "7", true}, {"7", "7", false}, {"6", "7", false}, {"10", "9", true}, {"", "7", false}, {"8", "", false}} {
		if got := Newer(tt.a, tt.b); got != tt.want {
			t.Errorf("Newer(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
