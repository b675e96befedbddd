package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
)

// Benchmarks of Sync on large trees. Each reports its own figures with
// b.ReportMetric, including a ratio against a baseline measured in the same
// process, so the ratio holds across machines even when absolute times do
// not. Seeding runs once per benchmark (b.Loop), outside the timed loop, and
// builds the seed commit directly (the generated kustomization.yaml files
// included) rather than through Sync, whose per-file staging makes a first
// Sync of thousands of files take very long. Run e.g.
//
//	go test -run xxx -bench . ./internal/gitrepo
//
// (one sample per figure; add -benchtime 3x for three).

const benchNamespaces = 100

// benchServer starts an HTTP Git server holding repoName whose branch holds
// README.md and, under the owned path "apiary", the given objects with the
// kustomization.yaml files Sync would generate for them.
func benchServer(b *testing.B, objects map[string][]byte) *gittestserver.GitServer {
	b.Helper()
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(srv.Root()) })
	srv.AutoCreate()
	fixture := b.TempDir()
	if err := os.WriteFile(filepath.Join(fixture, "README.md"), []byte("fleet\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if len(objects) > 0 {
		root := filepath.Join(fixture, "apiary")
		if _, err := apply(root, objects, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := writeKustomizations(root); err != nil {
			b.Fatal(err)
		}
	}
	if err := srv.InitRepo(fixture, branch, repoName); err != nil {
		b.Fatal(err)
	}
	if err := srv.StartHTTP(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.StopHTTP)
	return srv
}

func benchOpen(b *testing.B, srv *gittestserver.GitServer, dir string) *Repo {
	b.Helper()
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/" + repoName, Branch: branch, Dir: dir, Path: "apiary",
		Author: Author{Name: "apiary-bench", Email: "bench@example.com"},
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// benchObject is object i of a fleet spread over benchNamespaces namespaces,
// keyed by its ObjectPath.
func benchObject(i int, value string) (string, []byte) {
	ns := fmt.Sprintf("team-%03d", i%benchNamespaces)
	name := fmt.Sprintf("cm-%05d", i)
	body := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  v: %q\n", name, ns, value)
	return ObjectPath(ns, "ConfigMap", name), []byte(body)
}

func benchObjects(n int, value string) map[string][]byte {
	out := make(map[string][]byte, n)
	for i := range n {
		p, body := benchObject(i, value)
		out[p] = body
	}
	return out
}

func mustSync(b *testing.B, r *Repo, changes map[string][]byte, msg string) Result {
	b.Helper()
	res, err := r.Sync(context.Background(), changes, nil, msg)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSmallChangeIn10kFiles measures one changed object in a tree of
// 10,000 rendered files: (a) Sync through the persistent clone (fetch, reset,
// kustomize build, commit, push) against (b) the baseline a stateless writer
// pays, a fresh clone (Open on an empty Dir) followed by the same Sync. The
// clone alone is reported too (fresh-clone-only-ms/op), since the Sync itself
// is common to both.
func BenchmarkSmallChangeIn10kFiles(b *testing.B) {
	const files = 10_000
	srv := benchServer(b, benchObjects(files, "seed"))
	r := benchOpen(b, srv, filepath.Join(b.TempDir(), "persistent"))
	if got := len(mustFiles(b, r)); got < files {
		b.Fatalf("seeded clone holds %d files, want at least %d", got, files)
	}

	var incremental, fresh, freshOpen time.Duration
	n := 0
	for b.Loop() {
		n++
		p, body := benchObject(n%files, fmt.Sprintf("incremental-%d", n))
		start := time.Now()
		if res := mustSync(b, r, map[string][]byte{p: body}, "small change"); !res.Committed {
			b.Fatal("incremental Sync committed nothing")
		}
		incremental += time.Since(start)

		dir := filepath.Join(b.TempDir(), "fresh")
		p, body = benchObject((n+files/2)%files, fmt.Sprintf("fresh-%d", n))
		start = time.Now()
		fr := benchOpen(b, srv, dir)
		freshOpen += time.Since(start)
		if res := mustSync(b, fr, map[string][]byte{p: body}, "small change (fresh clone)"); !res.Committed {
			b.Fatal("fresh-clone Sync committed nothing")
		}
		fresh += time.Since(start)
		b.StopTimer()
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(ms(incremental)/float64(n), "incremental-ms/op")
	b.ReportMetric(ms(fresh)/float64(n), "fresh-ms/op")
	b.ReportMetric(ms(freshOpen)/float64(n), "fresh-clone-only-ms/op")
	b.ReportMetric(float64(fresh)/float64(incremental), "fresh/incremental")
}

func mustFiles(b *testing.B, r *Repo) map[string][]byte {
	b.Helper()
	files, err := r.Files()
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// perChangeSample is how many of the 1,000 one-change Syncs are run; their
// mean time is scaled to 1,000 (each Sync works on the same 1,000-object
// tree, so the cost per Sync does not drift). All 1,000 would take far longer
// than a benchmark should.
const perChangeSample = 20

// Benchmark1000Changes measures 1,000 object changes (updates of 1,000
// existing objects over 100 namespaces) delivered as a batching writer could
// deliver them: one Sync per change, batches of 100, and one Sync holding all
// of them. Each strategy runs against its own server. Reported per strategy:
// commits pushed and seconds until the last push, and each time as a ratio
// to the single Sync. The one-Sync-per-change time is extrapolated from
// perChangeSample Syncs (metric per-change-est-s).
func Benchmark1000Changes(b *testing.B) {
	const objects = 1_000
	type strategy struct {
		name    string
		batch   int
		syncs   int // Syncs run per iteration (fewer than objects/batch when sampled)
		r       *Repo
		took    time.Duration
		commits int
	}
	strategies := []*strategy{
		{name: "per-change", batch: 1, syncs: perChangeSample},
		{name: "batch100", batch: 100, syncs: objects / 100},
		{name: "all", batch: objects, syncs: 1},
	}
	for _, s := range strategies {
		srv := benchServer(b, benchObjects(objects, "seed"))
		s.r = benchOpen(b, srv, filepath.Join(b.TempDir(), s.name))
	}

	n := 0
	for b.Loop() {
		n++
		value := fmt.Sprintf("v%d", n)
		for _, s := range strategies {
			start := time.Now()
			for k := range s.syncs {
				from := k * s.batch
				changes := make(map[string][]byte, s.batch)
				for i := from; i < min(from+s.batch, objects); i++ {
					p, body := benchObject(i, value)
					changes[p] = body
				}
				res := mustSync(b, s.r, changes, fmt.Sprintf("%s %d", s.name, from))
				if !res.Committed {
					b.Fatalf("%s: Sync of %d changes committed nothing", s.name, len(changes))
				}
				s.commits++
			}
			s.took += time.Since(start)
		}
	}
	all := strategies[len(strategies)-1]
	allSeconds := all.took.Seconds() / float64(n)
	for _, s := range strategies {
		scale := float64(objects/s.batch) / float64(s.syncs) // 1 unless sampled
		seconds := s.took.Seconds() / float64(n) * scale
		unit := s.name + "-s"
		if scale != 1 {
			unit = s.name + "-est-s"
		}
		b.ReportMetric(float64(s.commits)/float64(n)*scale, s.name+"-commits")
		b.ReportMetric(seconds, unit)
		if s != all {
			b.ReportMetric(seconds/allSeconds, s.name+"/all")
		}
	}
}
