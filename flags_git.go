package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apiaryhq/apiary/internal/manager"
)

// gitFlags are the command-line settings of Git delivery.
type gitFlags struct {
	delivery                             string
	url, branch, path, routesPath        string
	secret, gitRepository, kustomization string
	signingKey                           string
	authorName, authorEmail, message     string
	window                               time.Duration
	checkoutDir                          string
	ageRecipients, ageRecipientsFile     string
	tenants                              bool
}

func (f *gitFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.delivery, "delivery", "direct",
		"How rendered objects are delivered: direct (server-side apply) or git (commits for Flux).")
	fs.StringVar(&f.url, "git-url", "", "Git delivery: repository URL (or use --git-repository).")
	fs.StringVar(&f.branch, "git-branch", "", "Git delivery: branch to commit to (default main, or the GitRepository's).")
	fs.StringVar(&f.path, "git-path", "apiary", "Git delivery: folder of the repository Apiary owns.")
	fs.StringVar(&f.routesPath, "git-routes-path", "",
		"Git delivery: folder of workspaces' access routes, one folder per regional cluster, applied there by Flux (default <git-path>-routes; must not overlap --git-path).")
	fs.StringVar(&f.secret, "git-secret", "",
		"Git delivery: <namespace>/<name> of a Secret with credentials in Flux's format (username/password, bearerToken, or identity with known_hosts). Read again when it changes.")
	fs.StringVar(&f.gitRepository, "git-repository", "",
		"Git delivery: <namespace>/<name> of a Flux GitRepository whose URL, branch and Secret are reused, and which is asked to fetch after each push.")
	fs.StringVar(&f.signingKey, "git-signing-key-secret", "",
		"Git delivery: <namespace>/<name> of a Secret with the key that signs every commit: an armored OpenPGP private key (git.asc, optional passphrase) or an SSH private key (identity, optional password). Read again when it changes.")
	fs.StringVar(&f.kustomization, "git-kustomization", "",
		"Git delivery: <namespace>/<name> of the Flux Kustomization that applies --git-path, read for the Synced condition.")
	fs.StringVar(&f.authorName, "git-author-name", "Apiary", "Git delivery: commit author name.")
	fs.StringVar(&f.authorEmail, "git-author-email", "apiary@exalsius.ai", "Git delivery: commit author email.")
	fs.StringVar(&f.message, "git-commit-message", "apiary: update rendered objects", "Git delivery: first line of every commit message.")
	fs.DurationVar(&f.window, "git-commit-window", 0, "Git delivery: how long changes are collected into one commit (default 2s).")
	fs.StringVar(&f.checkoutDir, "git-checkout-dir", "", "Git delivery: folder of the persistent clone (default a temporary folder).")
	fs.StringVar(&f.ageRecipients, "sops-age-recipients", "",
		"Git delivery: comma-separated age recipients Secrets are encrypted for with SOPS. Without any, Secrets are refused.")
	fs.StringVar(&f.ageRecipientsFile, "sops-age-recipients-file", "", "Git delivery: a file of age recipients, one per line.")
	fs.BoolVar(&f.tenants, "tenant-git", false,
		"Let a namespace send its Colonies and workspaces to its own repository with the annotation "+
			"delivery.apiary.exalsius.ai/git-repository=<Flux GitRepository in the namespace> (needs Flux's CRDs).")
}

// options turns the flags into manager options: the installation's Git
// delivery (nil in direct mode) and the template of tenants' Git delivery
// (nil without --tenant-git).
func (f *gitFlags) options() (git, tenants *manager.GitOptions, err error) {
	if f.delivery != "direct" && f.delivery != "git" {
		return nil, nil, fmt.Errorf("--delivery must be direct or git, not %q", f.delivery)
	}
	o := &manager.GitOptions{
		URL: f.url, Branch: f.branch, Path: f.path, RoutesPath: f.routesPath,
		AuthorName: f.authorName, AuthorEmail: f.authorEmail, CommitMessage: f.message,
		CommitWindow: f.window, CheckoutDir: f.checkoutDir,
	}
	if o.SecretRef, err = manager.ParseObjectRef("--git-secret", f.secret); err != nil {
		return nil, nil, err
	}
	if o.GitRepositoryRef, err = manager.ParseObjectRef("--git-repository", f.gitRepository); err != nil {
		return nil, nil, err
	}
	if o.KustomizationRef, err = manager.ParseObjectRef("--git-kustomization", f.kustomization); err != nil {
		return nil, nil, err
	}
	if o.SigningKeySecretRef, err = manager.ParseObjectRef("--git-signing-key-secret", f.signingKey); err != nil {
		return nil, nil, err
	}
	recipients := splitList(f.ageRecipients)
	if f.ageRecipientsFile != "" {
		data, err := os.ReadFile(f.ageRecipientsFile)
		if err != nil {
			return nil, nil, fmt.Errorf("reading --sops-age-recipients-file: %w", err)
		}
		recipients = append(recipients, splitList(string(data))...)
	}
	o.AgeRecipients = recipients
	if f.tenants {
		t := *o
		tenants = &t
	}
	if f.delivery == "git" {
		git = o
	}
	return git, tenants, nil
}

// splitList splits on commas and new lines, dropping blanks and comments.
func splitList(s string) []string {
	var out []string
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}
