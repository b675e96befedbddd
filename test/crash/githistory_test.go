package crash_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// historyFigures is what checkHistory found.
type historyFigures struct {
	commits, pushes, filesChanged int
	// pauses are the writes that only added or removed k0rdent's pause.
	pauses   int
	problems []string
}

// checkHistory checks the repository as a reviewer would after the kills:
// git fsck is clean; the branch is one line of commits (no merges, one
// root); no commit is empty (its tree equals its parent's); no file
// content was committed twice at a path (a file written again after it
// changed or went: a duplicate write or a resurrected object; the
// generated kustomization.yaml files are left out, and so is a ServiceSet
// that a stop paused and a start unpaused again); and every move of the
// branch the server's update hook saw was a fast forward (no force push).
func (rig *gitRig) checkHistory() (historyFigures, error) {
	var f historyFigures
	problem := func(format string, args ...any) { f.problems = append(f.problems, fmt.Sprintf(format, args...)) }
	if out, err := rig.git("fsck", "--full", "--strict", "--no-dangling"); err != nil {
		problem("git fsck: %v", err)
	} else if strings.TrimSpace(out) != "" {
		problem("git fsck reports: %s", out)
	}
	out, err := rig.git("log", "--format=%H %T %P", gitBranch)
	if err != nil {
		return f, err
	}
	trees := map[string]string{}
	var lines [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return f, fmt.Errorf("unexpected git log line %q", line)
		}
		trees[fields[0]] = fields[1]
		lines = append(lines, fields)
	}
	roots := 0
	for _, fields := range lines {
		f.commits++
		switch parents := fields[2:]; len(parents) {
		case 0:
			roots++
		case 1:
			if trees[parents[0]] == fields[1] {
				problem("commit %s changes nothing (empty commit)", fields[0])
			}
		default:
			problem("commit %s is a merge of %v", fields[0], parents)
		}
	}
	if roots != 1 {
		problem("%d root commits", roots)
	}
	if err := rig.checkRewrites(&f, problem); err != nil {
		return f, err
	}
	log, err := os.ReadFile(rig.refLog)
	if err != nil && !os.IsNotExist(err) {
		return f, fmt.Errorf("reading the ref log: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if line == "" {
			continue
		}
		f.pushes++
		if fields := strings.Fields(line); len(fields) != 3 || fields[2] != "ff" {
			problem("branch update %q is not a fast forward", line)
		}
	}
	return f, nil
}

// checkRewrites walks the history oldest first and reports a file content
// committed a second time at the same path, unless the content it replaced
// differs from it only by k0rdent's pause annotation: a workspace's stop
// pauses its ServiceSet, its start lifts the pause, which is the content
// before the stop.
func (rig *gitRig) checkRewrites(f *historyFigures, problem func(string, ...any)) error {
	out, err := rig.git("log", "--reverse", "--raw", "--no-abbrev", "--no-renames", "--format=commit %H", gitBranch, "--", gitPath)
	if err != nil {
		return err
	}
	seen := map[string]map[string]string{} // path -> blob -> commit
	last := map[string]string{}            // path -> blob now, "" when deleted
	commit := ""
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "commit "); ok {
			commit = c
			continue
		}
		if !strings.HasPrefix(line, ":") {
			continue
		}
		meta, path, ok := strings.Cut(line, "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) < 5 {
			return fmt.Errorf("unexpected git log --raw line %q", line)
		}
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		f.filesChanged++
		blob, status := fields[3], fields[4]
		prev := last[path]
		if status == "D" {
			last[path] = ""
			continue
		}
		last[path] = blob
		if seen[path] == nil {
			seen[path] = map[string]string{}
		}
		if first, dup := seen[path][blob]; dup {
			if pause, err := rig.onlyPauseDiffers(prev, blob); err != nil {
				return err
			} else if pause {
				f.pauses++
				continue
			}
			problem("%s was written again in commit %s with the content of commit %s", path, commit, first)
			continue
		}
		seen[path][blob] = commit
	}
	return nil
}

// onlyPauseDiffers reports whether two blobs are the same object but for
// k0rdent's pause annotation (and the applied digest, which digests it).
func (rig *gitRig) onlyPauseDiffers(a, b string) (bool, error) {
	if a == "" || a == b {
		return false, nil
	}
	var objs [2]map[string]any
	for i, blob := range []string{a, b} {
		out, err := rig.git("cat-file", "blob", blob)
		if err != nil {
			return false, err
		}
		if err := yaml.Unmarshal([]byte(out), &objs[i]); err != nil {
			return false, nil // not one object: no pause to compare
		}
		md, _ := objs[i]["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		delete(ann, k0rdentv1beta1.ServiceSetPausedAnnotation)
		delete(ann, canon.AnnotationAppliedDigest)
		if md != nil && len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	return reflect.DeepEqual(objs[0], objs[1]), nil
}
