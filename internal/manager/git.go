package manager

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/gitrepo"
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
	// SigningKeySecretRef names a Secret with an armored OpenPGP private key
	// (git.asc, optional passphrase) that signs every commit.
	SigningKeySecretRef *types.NamespacedName
	// SaltSecretRef names the Secret keeping the salt of the SOPS plaintext
	// digests; DefaultSaltSecretName in POD_NAMESPACE when empty.
	SaltSecretRef *types.NamespacedName
	// Encrypter, for tests, replaces the SOPS encrypter.
	Encrypter delivery.SecretEncrypter
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

// newGitSink builds the Git sink from the options, reading the Flux
// GitRepository and the credentials Secret once, with the uncached reader.
func newGitSink(ctx context.Context, mgr ctrl.Manager, o GitOptions) (*delivery.Git, error) {
	opts, err := gitSinkOptions(ctx, mgr, o)
	if err != nil {
		return nil, err
	}
	return delivery.NewGit(opts)
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
	auth, err := gitAuth(ctx, reader, o)
	if err != nil {
		return delivery.GitOptions{}, err
	}
	enc := o.Encrypter
	if enc == nil {
		if enc, err = newSealer(ctx, mgr.GetClient(), reader, o.AgeRecipients, o.SaltSecretRef); err != nil {
			return delivery.GitOptions{}, err
		}
	}
	signer, err := signingKey(ctx, reader, o.SigningKeySecretRef)
	if err != nil {
		return delivery.GitOptions{}, err
	}
	dir := o.CheckoutDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "apiary-git-"); err != nil {
			return delivery.GitOptions{}, fmt.Errorf("creating the checkout folder: %w", err)
		}
	}
	repo := gitrepo.Options{
		URL: o.URL, Branch: defaultString(o.Branch, "main"), Dir: dir, Path: defaultString(o.Path, "apiary"),
		Auth:       auth,
		SigningKey: signer,
		Author:     gitrepo.Author{Name: defaultString(o.AuthorName, "Apiary"), Email: defaultString(o.AuthorEmail, "apiary@exalsius.ai")},
	}
	return delivery.GitOptions{
		Repo:      repo,
		Mapper:    mgr.GetRESTMapper(),
		Reader:    mgr.GetClient(),
		Scheme:    mgr.GetScheme(),
		Encrypter: enc,
		Window:    o.CommitWindow,
		Message:   o.CommitMessage,
		Flux: delivery.FluxTarget{
			GitRepository: o.GitRepositoryRef,
			Kustomization: o.KustomizationRef,
			Client:        mgr.GetClient(),
		},
		Logger: mgr.GetLogger().WithName("git"),
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
	}
	if o.Branch == "" {
		o.Branch, _, _ = unstructured.NestedString(gr.Object, "spec", "ref", "branch")
	}
	if name, _, _ := unstructured.NestedString(gr.Object, "spec", "secretRef", "name"); o.SecretRef == nil && name != "" {
		o.SecretRef = &types.NamespacedName{Namespace: o.GitRepositoryRef.Namespace, Name: name}
	}
	return nil
}

// gitAuth turns the credentials Secret into a go-git auth method.
func gitAuth(ctx context.Context, reader client.Reader, o GitOptions) (transport.AuthMethod, error) {
	if o.SecretRef == nil {
		return nil, nil
	}
	s := &corev1.Secret{}
	if err := reader.Get(ctx, *o.SecretRef, s); err != nil {
		return nil, fmt.Errorf("reading Git credentials Secret %s: %w", o.SecretRef, err)
	}
	return authFromSecret(s.Data, o.URL)
}

// authFromSecret follows Flux's Secret format for Git credentials.
func authFromSecret(data map[string][]byte, url string) (transport.AuthMethod, error) {
	switch {
	case len(data["identity"]) > 0:
		keys, err := gitssh.NewPublicKeys(sshUser(url), data["identity"], string(data["password"]))
		if err != nil {
			return nil, fmt.Errorf("reading the SSH identity of the Git credentials: %w", err)
		}
		if len(data["known_hosts"]) == 0 {
			return nil, errors.New("the Git credentials hold an SSH identity but no known_hosts")
		}
		f, err := os.CreateTemp("", "apiary-known-hosts-")
		if err != nil {
			return nil, fmt.Errorf("writing known_hosts: %w", err)
		}
		defer f.Close()
		if _, err := f.Write(data["known_hosts"]); err != nil {
			return nil, fmt.Errorf("writing known_hosts: %w", err)
		}
		cb, err := gitssh.NewKnownHostsCallback(f.Name())
		if err != nil {
			return nil, fmt.Errorf("reading known_hosts of the Git credentials: %w", err)
		}
		keys.HostKeyCallback = cb
		return keys, nil
	case len(data["bearerToken"]) > 0:
		return &githttp.TokenAuth{Token: string(data["bearerToken"])}, nil
	case len(data["username"]) > 0 || len(data["password"]) > 0:
		return &githttp.BasicAuth{Username: string(data["username"]), Password: string(data["password"])}, nil
	}
	return nil, errors.New("the Git credentials Secret holds none of identity, bearerToken, username/password")
}

// sshUser is the user of an SSH repository URL, "git" when it names none.
func sshUser(raw string) string {
	if u, err := neturl.Parse(raw); err == nil && u.Scheme == "ssh" && u.User != nil && u.User.Username() != "" {
		return u.User.Username()
	}
	if at := strings.Index(raw, "@"); at > 0 && !strings.Contains(raw, "://") {
		return raw[:at] // scp-like user@host:path
	}
	return "git"
}

func defaultString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
