package manager

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestRoutesPath(t *testing.T) {
	tests := []struct {
		name, path, routes string
		want               string
		wantErr            bool
	}{
		{name: "defaults", want: "apiary-routes"},
		{name: "beside the path", path: "clusters/mgmt/apiary", want: "clusters/mgmt/apiary-routes"},
		{name: "its own folder", path: "clusters/mgmt/apiary", routes: "regions", want: "regions"},
		{name: "cleaned", path: "apiary", routes: "./regions/", want: "regions"},
		{name: "same folder", path: "apiary", routes: "apiary/", wantErr: true},
		{name: "inside the path", path: "apiary", routes: "apiary/routes", wantErr: true},
		{name: "around the path", path: "clusters/mgmt/apiary", routes: "clusters", wantErr: true},
		{name: "repository root", path: "apiary", routes: ".", wantErr: true},
		{name: "a sibling with a common prefix", path: "apiary", routes: "apiary2", want: "apiary2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := routesPath(GitOptions{Path: tt.path, RoutesPath: tt.routes})
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("must not overlap")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
