package delivery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkGitSink1000Changes hands the Git sink 1,000 changes, one per
// owner, from 8 concurrent workers as the workspace controller would, and
// reports the commits made and the time until the last one was pushed. The
// baseline, in the same process and against the same server, commits and
// pushes every change on its own before the next (what a writer without
// batching does); it runs 100 changes (APIARY_BENCH_GIT_BASELINE), and the
// figures compare the time per change.
//
//	make testenv && KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.35.4-etcd3.6.16 \
//	  go test ./internal/delivery -run '^$' -bench GitSink1000 -benchtime 1x
func BenchmarkGitSink1000Changes(b *testing.B) {
	const changes, workers = 1000, 8
	baseline := 100
	if v, err := strconv.Atoi(os.Getenv("APIARY_BENCH_GIT_BASELINE")); err == nil && v > 0 {
		baseline = v
	}
	if env == nil {
		b.Skip("no API server")
	}
	for b.Loop() {
		ns := env.NewNamespace(b, "git-bench")
		srv := startGitServer(b)
		sink := startGit(b, srv, func(o *GitOptions) { o.Window = DefaultCommitWindow })
		before := len(history(b, srv))
		start := time.Now()
		applyAll(b, sink, ns, "batched", changes, workers)
		batched, batchedCommits := time.Since(start), len(history(b, srv))-before

		naive := startGit(b, srv, func(o *GitOptions) { o.Window = time.Nanosecond; o.Repo.Dir = b.TempDir() })
		before = len(history(b, srv))
		start = time.Now()
		applyAll(b, naive, ns, "naive", baseline, 1)
		alone, aloneCommits := time.Since(start), len(history(b, srv))-before

		perChange := batched.Seconds() / changes
		basePerChange := alone.Seconds() / float64(baseline)
		b.ReportMetric(float64(batchedCommits), "commits")
		b.ReportMetric(batched.Seconds(), "s-to-last-push")
		b.ReportMetric(float64(aloneCommits)/float64(baseline), "baseline-commits/change")
		b.ReportMetric(basePerChange*1000, "baseline-ms/change")
		b.ReportMetric(perChange*1000, "ms/change")
		b.ReportMetric(basePerChange/perChange, "baseline/batched-time-per-change")
	}
}

// applyAll applies n owners' objects from workers goroutines; with one
// worker each change is committed before the next is applied. It returns
// once every owner's change is committed.
func applyAll(b *testing.B, sink *Git, ns, prefix string, n, workers int) {
	b.Helper()
	ctx := context.Background()
	owners := make(chan int, n)
	for i := range n {
		owners <- i
	}
	close(owners)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range owners {
				owner := testOwner(ns, fmt.Sprintf("%s-%04d", prefix, i))
				objs := []*unstructured.Unstructured{configMap(ns, owner.Name, map[string]string{"payload": fmt.Sprintf("%01000d", i)})}
				for {
					res, err := sink.Apply(ctx, owner, objs, nil)
					if errors.Is(err, ErrNotOpen) {
						time.Sleep(10 * time.Millisecond) // the clone is being opened
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					if !res.Pending || workers > 1 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	// Wait until the sink committed everything.
	for {
		sink.mu.Lock()
		left := len(sink.pending)
		sink.mu.Unlock()
		if left == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
