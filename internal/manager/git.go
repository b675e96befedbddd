package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/check"
	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/gitauth"
	"github.com/apiaryhq/apiary/internal/gitrepo"
	"github.com/apiaryhq/apiary/internal/shard"
)

// GitOptions configure Git delivery. Options.Git nil means direct delivery.
type GitOptions struct {
	// URL of the repository (https://, http:// or ssh://). May be empty when
	// GitRepositoryRef names a Flux GitRepository to take it from.
	URL string
	// Branch to commit to ("main" when empty, or the GitRepository's).
	Branch string
	// Path is the folder of the repository Apiary owns ("apiary" when empty).
	Path string
	// SecretRef names a Secret with credentials in Flux's format: username
	// and password, bearerToken, or identity (an SSH private key) with
	// known_hosts. Taken from the GitRepository when empty.
	SecretRef *types.NamespacedName
	// GitRepositoryRef names a Flux GitRepository whose URL, branch and
	// Secret are reused; Flux is asked to fetch it after every push.
	GitRepositoryRef *types.NamespacedName
	// KustomizationRef names the Flux Kustomization that applies Path; its
	// lastAppliedRevision gives the Synced condition.
	KustomizationRef *types.NamespacedName
	// AuthorName and AuthorEmail sign Apiary's commits.
	AuthorName, AuthorEmail string
	// CommitMessage is the first line of every commit.
	CommitMessage string
	// CommitWindow is how long changes are collected into one commit.
	CommitWindow time.Duration
	// CheckoutDir holds the persistent clone (a temporary folder when empty).
	CheckoutDir string
	// RoutesPath is the folder of the repository that holds workspaces'
	// routes, one folder per regional cluster ("<Path>-routes" when
	// empty). It must not overlap Path: Flux applies it to the regional
	// clusters, not to the management cluster.
	RoutesPath string
	// AgeRecipients are the age public keys Secrets are encrypted for with
	// SOPS. Without any, Secrets are refused.
	AgeRecipients []string
	// SigningKeySecretRef names a Secret with a key that signs every
	// commit: an armored OpenPGP private key (git.asc, optional
	// passphrase) or an SSH private key (identity, optional password).
	SigningKeySecretRef *types.NamespacedName
	// SaltSecretRef names the Secret keeping the salt of the SOPS plaintext
	// digests; DefaultSaltSecretName in POD_NAMESPACE when empty.
	SaltSecretRef *types.NamespacedName
	// Encrypter, for tests, replaces the SOPS encrypter.
	Encrypter seal.Encrypter
}

// ParseObjectRef parses "<namespace>/<name>" of a flag; nil when empty.
func ParseObjectRef(flag, s string) (*types.NamespacedName, error) {
	if s == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s must be <namespace>/<name>, not %q", flag, s)
	}
	return &types.NamespacedName{Namespace: ns, Name: name}, nil
}

var gitRepositoryKind = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}

// newGitSink builds a Git sink from the options, reading the Flux
// GitRepository once with the uncached reader; adjust, when set, changes
// its options first. The credentials and signing key Secrets are read when
// the sink first fetches, and again whenever they change: the sink retries
// at once what failed when one of them changes.
func (d *deps) newGitSink(ctx context.Context, mgr ctrl.Manager, o GitOptions, adjust func(*delivery.GitOptions)) (*delivery.Git, error) {
	opts, err := gitSinkOptions(ctx, mgr, o)
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(&opts)
	}
	if gate := d.shards; gate.Enabled() {
		// A shard sweeps only the files of the units it holds.
		opts.MayRemove = func(unit string) bool { return shard.MayRemove(gate.Config, unit, gate.Holds) }
	}
	g, err := delivery.NewGit(opts)
	if err != nil {
		return nil, err
	}
	d.gits.Add(g)
	if c, ok := opts.Repo.Credentials.(*gitauth.Credentials); ok {
		for _, ref := range []*types.NamespacedName{c.AuthSecret, c.SigningSecret} {
			if ref != nil {
				d.secrets.Watch(*ref, g.Retry)
			}
		}
	}
	return g, nil
}

// gitSinkOptions are the options of a Git sink that delivers to the
// management cluster.
func gitSinkOptions(ctx context.Context, mgr ctrl.Manager, o GitOptions) (delivery.GitOptions, error) {
	reader := mgr.GetAPIReader()
	if o.GitRepositoryRef != nil {
		if err := fromGitRepository(ctx, reader, &o); err != nil {
			return delivery.GitOptions{}, err
		}
	}
	if o.URL == "" {
		return delivery.GitOptions{}, errors.New("git delivery needs a repository URL or a Flux GitRepository")
	}
	logger := mgr.GetLogger().WithName("git")
	creds := &gitauth.Credentials{Cached: mgr.GetCache(), Live: reader, URL: o.URL,
		AuthSecret: o.SecretRef, SigningSecret: o.SigningKeySecretRef, Logger: logger.WithName("credentials")}
	var err error
	enc := o.Encrypter
	if enc == nil {
		if enc, err = newSealer(ctx, mgr.GetClient(), reader, o.AgeRecipients, o.SaltSecretRef); err != nil {
			return delivery.GitOptions{}, err
		}
	}
	dir := o.CheckoutDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "apiary-git-"); err != nil {
			return delivery.GitOptions{}, fmt.Errorf("creating the checkout folder: %w", err)
		}
	}
	repo := gitrepo.Options{
		URL: o.URL, Branch: defaultString(o.Branch, "main"), Dir: dir, Path: defaultString(o.Path, "apiary"),
		Credentials: creds,
		Author:      gitrepo.Author{Name: defaultString(o.AuthorName, "Apiary"), Email: defaultString(o.AuthorEmail, "apiary@exalsius.ai")},
	}
	return delivery.GitOptions{
		Repo:      repo,
		Mapper:    mgr.GetRESTMapper(),
		Reader:    mgr.GetClient(),
		Scheme:    mgr.GetScheme(),
		Encrypter: enc,
		// The folder is applied to the management cluster: check objects
		// there before they are committed.
		Validator: &check.DryRun{Client: mgr.GetClient(), FieldManager: delivery.DefaultFieldManager},
		Window:    o.CommitWindow,
		Message:   o.CommitMessage,
		Flux: delivery.FluxTarget{
			GitRepository: o.GitRepositoryRef,
			Kustomization: o.KustomizationRef,
			Client:        mgr.GetClient(),
		},
		Logger: logger,
	}, nil
}

// fromGitRepository fills URL, branch and Secret from a Flux GitRepository.
func fromGitRepository(ctx context.Context, reader client.Reader, o *GitOptions) error {
	gr := &unstructured.Unstructured{}
	gr.SetGroupVersionKind(gitRepositoryKind)
	if err := reader.Get(ctx, *o.GitRepositoryRef, gr); err != nil {
		return fmt.Errorf("reading Flux GitRepository %s: %w", o.GitRepositoryRef, err)
	}
	if o.URL == "" {
		o.URL, _, _ = unstructured.NestedString(gr.Object, "spec", "url")
		if err := gitrepo.CheckRemoteURL(o.URL); err != nil {
			return fmt.Errorf("using Flux GitRepository %s: %w", o.GitRepositoryRef, err)
		}
	}
	if o.Branch == "" {
		o.Branch, _, _ = unstructured.NestedString(gr.Object, "spec", "ref", "branch")
	}
	if name, _, _ := unstructured.NestedString(gr.Object, "spec", "secretRef", "name"); o.SecretRef == nil && name != "" {
		o.SecretRef = &types.NamespacedName{Namespace: o.GitRepositoryRef.Namespace, Name: name}
	}
	return nil
}

func defaultString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
