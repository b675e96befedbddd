package shard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Git mode: every replica commits to one branch of the world's Git
// server, at gitPath, which Flux's Kustomization applies (prune on).
const (
	gitRepo, gitBranch = "shard.git", "main"
	gitPath            = "shards"
	fluxNS, fluxName   = "flux-system", "shards"
)

// updateHook logs "<old> <new> ff|FORCE|DELETE" for every branch update.
const updateHook = `#!/bin/sh
zero=0000000000000000000000000000000000000000
kind=ff
if [ "$2" != "$zero" ] && [ "$3" != "$zero" ] && ! git merge-base --is-ancestor "$2" "$3"; then kind=FORCE; fi
[ "$3" = "$zero" ] && kind=DELETE
echo "$2 $3 $kind" >> "%s"
exit 0
`

// setUpGit installs the update hook and Flux's objects; once per suite.
func setUpGit(ctx context.Context) error {
	bare := filepath.Join(theWorld.Git.Root(), gitRepo)
	hook := filepath.Join(bare, "hooks", "update")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(hook, fmt.Appendf(nil, updateHook, refLog()), 0o755); err != nil {
		return err
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}}); err != nil {
		return err
	}
	objs, err := testenv.FluxSync{Namespace: fluxNS, Name: fluxName, URL: theWorld.Git.RepoURL(gitRepo), Branch: gitBranch, Path: gitPath}.Objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

func refLog() string { return filepath.Join(theWorld.Dir, "ref-updates.log") }

// gitFlags are the flags of a replica in Git mode, with a clone of its own.
func gitFlags(name string) []string {
	return []string{
		"--delivery=git",
		"--git-url=" + theWorld.Git.RepoURL(gitRepo),
		"--git-repository=" + fluxNS + "/" + fluxName,
		"--git-kustomization=" + fluxNS + "/" + fluxName,
		"--git-path=" + gitPath,
		"--git-checkout-dir=" + filepath.Join(theWorld.Dir, "checkout-"+name+"-"+fmt.Sprint(time.Now().UnixNano())),
		"--git-commit-window=300ms",
	}
}

// git runs git in the bare repository.
func git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = filepath.Join(theWorld.Git.Root(), gitRepo)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// gitFiles lists the files of a namespace's folder at the branch head
// (without kustomization.yaml), as "<kind>/<name>.yaml".
func gitFiles(g Gomega, ns string) []string {
	out, err := git("ls-tree", "-r", "--name-only", gitBranch, "--", gitPath+"/"+ns)
	g.Expect(err).NotTo(HaveOccurred())
	var files []string
	for _, f := range strings.Fields(out) {
		if filepath.Base(f) != "kustomization.yaml" {
			files = append(files, strings.TrimPrefix(f, gitPath+"/"+ns+"/"))
		}
	}
	return files
}

// serviceSets records the UID of each workspace's ServiceSet, once Flux
// applied it.
func serviceSets(t *testing.T, ws ...*workspacesv1.WorkspaceDeployment) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, w := range ws {
		NewWithT(t).Eventually(func(g Gomega) {
			ss := &k0rdentv1beta1.ServiceSet{}
			key := client.ObjectKey{Namespace: w.Namespace, Name: plan.ServiceSetName(w.Spec.ClusterDeploymentRef.Name, w.Name)}
			g.Expect(env.Client.Get(context.Background(), key, ss)).To(Succeed())
			out[key.Name] = ss.UID
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}
	return out
}

// expectGitIntact checks, after units moved between shards, what the move
// must not have done in Git mode: every workspace's ServiceSet file is on
// the branch head and was never removed from it (no commit ever deleted a
// file of the fleet's namespace: no window where a file was absent); the
// ServiceSets Flux applied before the move are the same objects (same
// UID: never pruned and created again); Flux applied the head; and every
// move of the branch was a fast forward.
func expectGitIntact(t *testing.T, ns string, before map[string]types.UID, ws ...*workspacesv1.WorkspaceDeployment) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		files := gitFiles(g, ns)
		for _, w := range ws {
			g.Expect(files).To(ContainElement("serviceset/"+plan.ServiceSetName(w.Spec.ClusterDeploymentRef.Name, w.Name)+".yaml"),
				"the file of workspace %s", w.Name)
		}
		head, err := git("rev-parse", gitBranch)
		g.Expect(err).NotTo(HaveOccurred())
		ks := &unstructured.Unstructured{}
		ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		ks.SetKind("Kustomization")
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: fluxNS, Name: fluxName}, ks)).To(Succeed())
		applied, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
		g.Expect(applied).To(HaveSuffix(strings.TrimSpace(head)), "Flux applied the head")
	}, timeout, 500*time.Millisecond).Should(Succeed())
	deleted, err := git("log", "--diff-filter=D", "--name-only", "--format=%H", gitBranch, "--", gitPath+"/"+ns)
	g.Expect(err).NotTo(HaveOccurred())
	var removed []string
	for _, l := range strings.Fields(deleted) {
		if strings.HasPrefix(l, gitPath+"/") && filepath.Base(l) != "kustomization.yaml" {
			removed = append(removed, l)
		}
	}
	g.Expect(removed).To(BeEmpty(), "files of the fleet removed from the branch while every workspace lived")
	after := serviceSets(t, ws...)
	for name, uid := range before {
		g.Expect(after[name]).To(Equal(uid), "ServiceSet %s was pruned and created again", name)
	}
	expectNoForcePush(t)
}

// expectNoForcePush fails on any branch move the update hook saw that was
// not a fast forward.
func expectNoForcePush(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(refLog())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		NewWithT(t).Expect(line).To(HaveSuffix(" ff"), "a branch move that is no fast forward")
	}
}
