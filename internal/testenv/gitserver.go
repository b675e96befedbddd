package testenv

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// GitServer serves the bare repositories of a folder over Git's smart HTTP
// protocol on a loopback port, through Git's own git-http-backend (Debian's
// git package), so that go-git and Flux's source-controller can clone from it
// and push to it. It keeps its port across Stop and Start, so tests can take
// the server down and bring it back at the same URL with the same
// repositories.
type GitServer struct {
	root     string
	backend  string
	username string
	password string

	mu     sync.Mutex
	addr   string
	srv    *http.Server
	stalls []*gitStall
}

// GitServerOption changes how a GitServer serves.
type GitServerOption func(*GitServer)

// WithGitBasicAuth makes the server refuse every request that does not carry
// these HTTP basic-auth credentials.
func WithGitBasicAuth(username, password string) GitServerOption {
	return func(s *GitServer) { s.username, s.password = username, password }
}

// SetBasicAuth changes the credentials the server accepts from the next
// request on, as a Git host does when a password or token is rotated. The
// server must have been started with WithGitBasicAuth.
func (s *GitServer) SetBasicAuth(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.username, s.password = username, password
}

// basicAuth returns the credentials the server accepts.
func (s *GitServer) basicAuth() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.username, s.password
}

// StartGitServer serves the repositories under root (created when missing)
// on a free loopback port. Stop it when done; root is left in place.
func StartGitServer(root string, opts ...GitServerOption) (*GitServer, error) {
	if root == "" {
		return nil, errors.New("starting Git server: no repository root given")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("starting Git server in %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("starting Git server: creating %s: %w", root, err)
	}
	backend, err := gitHTTPBackend()
	if err != nil {
		return nil, err
	}
	s := &GitServer{root: root, backend: backend, addr: "127.0.0.1:0"}
	for _, opt := range opts {
		opt(s)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// gitHTTPBackend finds git-http-backend in Git's exec path.
func gitHTTPBackend() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("finding git-http-backend: running `git --exec-path` (is git installed?): %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("finding git-http-backend: %w", err)
	}
	return p, nil
}

// Start serves again after Stop, on the same port. It does nothing when the
// server is running.
func (s *GitServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; give the kernel a little time should
	// it still hold it.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("starting Git server on %s: %w", s.addr, err)
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 30 * time.Second}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(s.srv)
	return nil
}

// Stop closes the listener and every open connection; clients see the
// server as down until Start.
func (s *GitServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	s.srv = nil
	if err != nil {
		return fmt.Errorf("stopping Git server on %s: %w", s.addr, err)
	}
	return nil
}

// handler runs git-http-backend for every request, after the credential check.
func (s *GitServer) handler() http.Handler {
	var backend http.Handler = &cgi.Handler{
		Path: s.backend,
		Dir:  s.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Accept pushes without a REMOTE_USER.
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
		},
	}
	backend = s.stalling(backend)
	if s.username == "" && s.password == "" {
		return backend
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		username, password := s.basicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
}

// Root is the folder holding the bare repositories.
func (s *GitServer) Root() string { return s.root }

// URL is the server's base URL, e.g. http://127.0.0.1:34567.
func (s *GitServer) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// RepoURL is the clone URL of the repository name.
func (s *GitServer) RepoURL(name string) string {
	return s.URL() + "/" + path.Clean(strings.TrimPrefix(filepath.ToSlash(name), "/"))
}

// Auth is the go-git credential for the server, nil without basic auth.
func (s *GitServer) Auth() transport.AuthMethod {
	username, password := s.basicAuth()
	if username == "" && password == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: username, Password: password}
}

// InitRepo creates the empty bare repository name (a path relative to the
// root, e.g. "fleet.git") whose HEAD names branch. The first commit pushed to
// branch creates it.
func (s *GitServer) InitRepo(name, branch string) error {
	dir, err := s.repoDir(name)
	if err != nil {
		return err
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("creating Git repository %s: branch %q: %w", name, branch, err)
	}
	_, err = gogit.PlainInitWithOptions(dir, &gogit.PlainInitOptions{
		Bare:        true,
		InitOptions: gogit.InitOptions{DefaultBranch: ref},
	})
	if err != nil {
		return fmt.Errorf("creating Git repository %s: %w", name, err)
	}
	return nil
}

func (s *GitServer) repoDir(name string) (string, error) {
	if name == "" || !filepath.IsLocal(name) {
		return "", fmt.Errorf("Git repository name %q must be a relative path inside the server root", name)
	}
	return filepath.Join(s.root, name), nil
}

// Commit pushes one commit to branch of repository name over HTTP, as a
// user would: it clones the branch (or starts it from the default branch or
// from nothing), writes files (path to content; a nil content removes the
// path), commits with message and pushes. It returns the commit's SHA-1.
func (s *GitServer) Commit(name, branch, message string, files map[string][]byte) (string, error) {
	url := s.RepoURL(name)
	auth := s.Auth()
	ref := plumbing.NewBranchReferenceName(branch)
	wrap := func(step string, err error) error {
		return fmt.Errorf("committing to %s branch %s: %s: %w", url, branch, step, err)
	}
	repo, err := gogit.Clone(memory.NewStorage(), memfs.New(), &gogit.CloneOptions{URL: url, Auth: auth})
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		if repo, err = gogit.Init(memory.NewStorage(), memfs.New()); err != nil {
			return "", wrap("init", err)
		}
		if _, err := repo.CreateRemote(&config.RemoteConfig{Name: gogit.DefaultRemoteName, URLs: []string{url}}); err != nil {
			return "", wrap("adding remote", err)
		}
		if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, ref)); err != nil {
			return "", wrap("setting HEAD", err)
		}
	case err != nil:
		return "", wrap("clone", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", wrap("worktree", err)
	}
	if err := checkoutBranch(repo, wt, ref); err != nil {
		return "", wrap("checkout", err)
	}
	for p, data := range files {
		if data == nil {
			if _, err := wt.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, index.ErrEntryNotFound) {
				return "", wrap("removing "+p, err)
			}
			continue
		}
		if err := writeWorktreeFile(wt, p, data); err != nil {
			return "", wrap("writing "+p, err)
		}
	}
	sha, err := wt.Commit(message, &gogit.CommitOptions{
		Author:            &object.Signature{Name: "Apiary Test", Email: "test@apiary.invalid", When: time.Now()},
		AllowEmptyCommits: true,
	})
	if err != nil {
		return "", wrap("commit", err)
	}
	spec := config.RefSpec(ref.String() + ":" + ref.String())
	if err := repo.Push(&gogit.PushOptions{RemoteName: gogit.DefaultRemoteName, RefSpecs: []config.RefSpec{spec}, Auth: auth}); err != nil {
		return "", wrap("push", err)
	}
	return sha.String(), nil
}

// checkoutBranch checks out ref, from the remote's branch when there is one,
// else as a new branch from HEAD; an unborn HEAD is left as is.
func checkoutBranch(repo *gogit.Repository, wt *gogit.Worktree, ref plumbing.ReferenceName) error {
	if _, err := repo.Head(); errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil
	}
	if _, err := repo.Reference(ref, false); err == nil {
		return wt.Checkout(&gogit.CheckoutOptions{Branch: ref})
	}
	remote := plumbing.NewRemoteReferenceName(gogit.DefaultRemoteName, ref.Short())
	if r, err := repo.Reference(remote, true); err == nil {
		return wt.Checkout(&gogit.CheckoutOptions{Branch: ref, Hash: r.Hash(), Create: true})
	}
	return wt.Checkout(&gogit.CheckoutOptions{Branch: ref, Create: true})
}

func writeWorktreeFile(wt *gogit.Worktree, p string, data []byte) error {
	fs := wt.Filesystem
	if dir := path.Dir(filepath.ToSlash(p)); dir != "." {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := fs.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = wt.Add(p)
	return err
}
