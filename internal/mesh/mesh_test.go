package mesh

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestChildAndMirrorLabelsPerMode(t *testing.T) {
	waypoint := map[string]string{
		DataplaneModeLabel:        "ambient",
		UseWaypointLabel:          "child-1-waypoint",
		UseWaypointNamespaceLabel: "istio-system",
		IngressUseWaypointLabel:   "true",
	}
	cases := []struct {
		name          string
		cfg           Config
		child, mirror map[string]string
		waypoints     bool
	}{
		{"ambient with waypoints", Config{Mode: Ambient, Waypoints: true}, waypoint,
			map[string]string{DataplaneModeLabel: "ambient"}, true},
		{"the zero mode is ambient", Config{Waypoints: true}, waypoint,
			map[string]string{DataplaneModeLabel: "ambient"}, true},
		{"ambient without waypoints", Config{Mode: Ambient}, map[string]string{DataplaneModeLabel: "ambient"},
			map[string]string{DataplaneModeLabel: "ambient"}, false},
		{"waypoints in another namespace", Config{Mode: Ambient, Waypoints: true, WaypointNamespace: "mesh"},
			map[string]string{DataplaneModeLabel: "ambient", UseWaypointLabel: "child-1-waypoint",
				UseWaypointNamespaceLabel: "mesh", IngressUseWaypointLabel: "true"},
			map[string]string{DataplaneModeLabel: "ambient"}, true},
		{"sidecar", Config{Mode: Sidecar, Waypoints: true}, map[string]string{InjectionLabel: "enabled"},
			map[string]string{InjectionLabel: "enabled"}, false},
		{"none", Config{Mode: None, Waypoints: true}, map[string]string{}, map[string]string{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.cfg.Validate()).To(Succeed())
			g.Expect(tc.cfg.ChildLabels("child-1")).To(Equal(tc.child))
			g.Expect(tc.cfg.MirrorLabels()).To(Equal(tc.mirror))
			g.Expect(tc.cfg.UsesWaypoints()).To(Equal(tc.waypoints))
		})
	}
}

func TestWaypointKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Config{}.Waypoint("c1").String()).To(Equal("istio-system/c1-waypoint"))
	g.Expect(Config{WaypointNamespace: "waypoints"}.Waypoint("c1").String()).To(Equal("waypoints/c1-waypoint"))
}

func TestParseMode(t *testing.T) {
	for _, m := range []string{"ambient", "sidecar", "none"} {
		got, err := ParseMode(m)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(string(got)).To(Equal(m))
	}
	for _, bad := range []string{"", "Ambient", "ambiant", "istio", " none"} {
		_, err := ParseMode(bad)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("want one of ambient, sidecar, none")), "%q", bad)
	}
}

func TestValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Config{}.Validate()).To(Succeed())
	g.Expect(Config{Mode: "ambiant"}.Validate()).To(MatchError(ContainSubstring(`unknown mesh mode "ambiant"`)))
	g.Expect(Config{WaypointNamespace: "Istio System"}.Validate()).To(MatchError(ContainSubstring("not a valid namespace name")))
}

func TestRelabel(t *testing.T) {
	ambient := Config{Mode: Ambient, Waypoints: true}.ChildLabels("c1")
	own := map[string]string{"workspaces.exalsius.ai/workspace": "nb", "team": "ml"}
	with := func(base map[string]string, more ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range append([]map[string]string{base}, more...) {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	cases := []struct {
		name      string
		labels    map[string]string
		want      map[string]string
		out       map[string]string
		changeful bool
	}{
		{"a new namespace gets every label", nil, with(own, ambient), with(own, ambient), true},
		{"up to date", with(own, ambient), with(own, ambient), with(own, ambient), false},
		{"ambient to sidecar drops the ambient and waypoint labels", with(own, ambient),
			with(own, map[string]string{InjectionLabel: "enabled"}), with(own, map[string]string{InjectionLabel: "enabled"}), true},
		{"waypoints turned off", with(own, ambient), with(own, map[string]string{DataplaneModeLabel: "ambient"}),
			with(own, map[string]string{DataplaneModeLabel: "ambient"}), true},
		{"to none keeps the workspace's and others' labels", with(own, ambient), own, own, true},
		{"a changed waypoint is set", with(own, ambient, map[string]string{UseWaypointLabel: "old-waypoint"}),
			with(own, ambient), with(own, ambient), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before := with(tc.labels)
			out, changed := Relabel(tc.labels, tc.want)
			g.Expect(out).To(Equal(tc.out))
			g.Expect(changed).To(Equal(tc.changeful))
			if tc.labels != nil {
				g.Expect(tc.labels).To(Equal(before), "the input is not modified")
			}
		})
	}
}
