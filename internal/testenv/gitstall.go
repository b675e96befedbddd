package testenv

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

// Git services a GitServer can stall (see Stall).
const (
	// UploadPack serves fetches and clones.
	UploadPack = "git-upload-pack"
	// ReceivePack serves pushes.
	ReceivePack = "git-receive-pack"
)

// gitStall is one armed Stall.
type gitStall struct {
	service, prefix string
	reached         chan struct{}
}

// Stall makes the next request of service (UploadPack or ReceivePack) whose
// URL path starts with prefix hang, so that a test can kill the client in
// the middle of it: an upload-pack answer (the pack of a fetch) is cut after
// half its first chunk; a receive-pack is carried out in full, the branch
// moved, and its answer held back, as when a push lands but the pusher dies
// before it hears so. The returned channel is closed once the request hangs
// there; it hangs until the client goes.
func (s *GitServer) Stall(service, prefix string) <-chan struct{} {
	st := &gitStall{service: service, prefix: prefix, reached: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls = append(s.stalls, st)
	return st.reached
}

// takeStall removes and returns the armed stall that matches r, if any.
func (s *GitServer) takeStall(r *http.Request) *gitStall {
	if r.Method != http.MethodPost {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.stalls {
		if strings.HasPrefix(r.URL.Path, st.prefix) && strings.HasSuffix(r.URL.Path, "/"+st.service) {
			s.stalls = append(s.stalls[:i], s.stalls[i+1:]...)
			return st
		}
	}
	return nil
}

// stalling serves next, applying armed stalls.
func (s *GitServer) stalling(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := s.takeStall(r)
		switch {
		case st == nil:
			next.ServeHTTP(w, r)
		case st.service == ReceivePack:
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			close(st.reached)
			<-r.Context().Done()
		default:
			next.ServeHTTP(&cutWriter{ResponseWriter: w, stall: st, done: r.Context().Done()}, r)
		}
	})
}

// cutWriter writes half of the first chunk of a body, then hangs until the
// client goes.
type cutWriter struct {
	http.ResponseWriter
	stall *gitStall
	done  <-chan struct{}
	cut   bool
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if w.cut {
		// The client is gone: swallow the rest of the answer.
		<-w.done
		return len(b), nil
	}
	w.cut = true
	n, err := w.ResponseWriter.Write(b[:len(b)/2])
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	close(w.stall.reached)
	if err != nil {
		return n, err
	}
	<-w.done
	return len(b), nil
}
