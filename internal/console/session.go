package console

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
)

// Login, when the cluster has authentication on (ACL 2.0): a user logs in
// with an access key (username) and secret key (password); the console
// checks them with a signed request, keeps an admin client signing with
// them for the session, and every page of that session uses it. Without a
// session pages use the console's unsigned admin client, which an
// authenticating cluster refuses (the error page links to the login).
//
// Sessions live in memory (a restart logs everyone out), at most
// maxSessions of them, each for sessionTTL after its last use.

const (
	sessionCookie = "apogee_session"
	sessionTTL    = 12 * time.Hour
	maxSessions   = 256
	noPermission  = 16 // RocketMQ's NO_PERMISSION
)

type session struct {
	user, secret string // the secret signs the session's test-message producer
	adm          *admin.Admin
	last         time.Time
	producer     *client.Producer // created on first test message; guarded by Server.mu
	closed       bool             // guarded by Server.mu
}

// a returns the admin client of the request's session, else the console's.
func (s *Server) a(r *http.Request) *admin.Admin {
	if ss := s.session(r); ss != nil {
		return ss.adm
	}
	return s.adm
}

func (s *Server) session(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	ss := s.sessions[c.Value]
	expired := ss != nil && time.Since(ss.last) > sessionTTL
	if expired {
		delete(s.sessions, c.Value)
	} else if ss != nil {
		ss.last = time.Now()
	}
	s.mu.Unlock()
	if expired {
		s.closeSession(ss) // not under mu: Close waits for the client's goroutines
		return nil
	}
	return ss
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	user := ""
	if ss := s.session(r); ss != nil {
		user = ss.user
	}
	return "login", struct{ User string }{user}, nil
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) (string, error) {
	user, pass := strings.TrimSpace(r.PostFormValue("username")), r.PostFormValue("password")
	if user == "" || pass == "" {
		return "", badRequest("give a username (access key) and a password (secret key)")
	}
	adm, err := admin.New(admin.WithNameServers(s.cfg.NameServers...), admin.WithLogger(s.logger),
		admin.WithTimeout(s.cfg.Timeout), admin.WithCredentials(user, pass))
	if err != nil {
		return "", err
	}
	if err := adm.Start(); err != nil {
		return "", err
	}
	if err := checkLogin(r, s, adm); err != nil {
		adm.Close()
		return "", &httpError{http.StatusUnauthorized, "login failed: " + err.Error()}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	if s.sessions == nil {
		s.sessions = map[string]*session{}
	}
	if len(s.sessions) >= maxSessions {
		s.mu.Unlock()
		adm.Close()
		return "", &httpError{http.StatusServiceUnavailable, "too many sessions; try again later"}
	}
	s.sessions[id] = &session{user: user, secret: pass, adm: adm, last: time.Now()}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return "/?ok=" + urlq("logged in as "+user), nil
}

// checkLogin proves the credentials with signed requests: the name
// server's cluster info, then a broker's runtime info.
func checkLogin(r *http.Request, s *Server, adm *admin.Admin) error {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := adm.ClusterInfo(ctx)
	if err != nil {
		return err
	}
	for _, b := range ci.Brokers {
		if addr := b.MasterAddr(); addr != "" {
			_, err := adm.BrokerRuntimeInfo(ctx, addr)
			return err
		}
	}
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		ss := s.sessions[c.Value]
		delete(s.sessions, c.Value)
		s.mu.Unlock()
		if ss != nil {
			s.closeSession(ss)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1})
	return "/login?ok=" + urlq("logged out"), nil
}

// refused reports whether err is a broker or name server's NO_PERMISSION
// (authentication or authorization refused).
func refused(err error) bool {
	var be *client.BrokerError
	return errors.As(err, &be) && be.Code == noPermission
}

// closeSessions closes every session's admin client (Close).
func (s *Server) closeSessions() {
	s.mu.Lock()
	all := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, ss := range all {
		s.closeSession(ss)
	}
}

// closeSession closes a session's clients once it is out of s.sessions.
func (s *Server) closeSession(ss *session) {
	s.mu.Lock()
	p := ss.producer
	ss.producer, ss.closed = nil, true
	s.mu.Unlock()
	if p != nil {
		p.Close()
	}
	ss.adm.Close()
}
