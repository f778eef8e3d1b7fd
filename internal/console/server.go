package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
)

//go:embed assets
var assets embed.FS

// Config configures a console.
type Config struct {
	// Listen is host:port; port 0 picks a free port.
	Listen string
	// NameServers are the cluster's name servers (host:port).
	NameServers []string
	// Timeout bounds each page's admin calls (default 10 s).
	Timeout time.Duration
}

// maxQuery bounds a request's query string and form body (bytes).
const maxQuery = 8 << 10

// Server is one console. New builds it; Start listens and serves; Close
// stops serving and closes the admin client and producer.
type Server struct {
	cfg    Config
	logger *slog.Logger
	adm    *admin.Admin
	tmpl   map[string]*template.Template

	// mu guards producer (test messages; created on first use) and
	// sessions (session.go).
	mu       sync.Mutex
	producer *client.Producer
	sessions map[string]*session
	topCache struct { // the dashboard's top topics (cluster.go)
		at     time.Time
		topics []topicTotal
	}

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// New builds a console; it starts nothing.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if len(cfg.NameServers) == 0 {
		return nil, errors.New("console: no name server")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "console")
	adm, err := admin.New(admin.WithNameServers(cfg.NameServers...), admin.WithLogger(logger), admin.WithTimeout(cfg.Timeout))
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	s := &Server{cfg: cfg, logger: logger, adm: adm}
	if s.tmpl, err = parseTemplates(); err != nil {
		return nil, err
	}
	return s, nil
}

var pageNames = []string{"dashboard", "cluster", "broker", "topics", "topic", "groups", "group", "producers",
	"messages", "message", "dlq", "trace", "error", "login", "acl", "controller",
	"lite", "liteparent", "litetopic"} // lite.go

func parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

var funcs = template.FuncMap{
	"time": func(t time.Time) string { return fmtTime(t) },
	"pct": func(s string) string {
		var f float64
		if _, err := fmt.Sscan(s, &f); err != nil || f < 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", f*100)
	},
}

func fmtTime(t time.Time) string {
	if t.IsZero() || t.UnixMilli() <= 0 {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

// Handler is the console's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	get := func(path string, h func(w http.ResponseWriter, r *http.Request) (string, any, error)) {
		mux.HandleFunc("GET "+path, s.page(h))
	}
	post := func(path string, h func(w http.ResponseWriter, r *http.Request) (string, error)) {
		mux.HandleFunc("POST "+path, s.write(h))
	}
	get("/{$}", s.dashboardPage)
	mux.HandleFunc("GET /api/dashboard", s.dashboardAPI)
	get("/cluster", s.clusterPage)
	get("/lite", s.litePage) // lite.go
	get("/lite/parent", s.liteParentPage)
	get("/lite/topic", s.liteTopicPage)
	get("/broker", s.brokerPage)
	post("/broker/config", s.updateBrokerConfig)
	get("/topics", s.topicsPage)
	post("/topics/create", s.createTopic)
	get("/topic", s.topicPage)
	post("/topic/update", s.updateTopic)
	post("/topic/delete", s.deleteTopic)
	post("/topic/send", s.sendTestMessage)
	get("/groups", s.groupsPage)
	post("/groups/create", s.createGroup)
	get("/group", s.groupPage)
	post("/group/delete", s.deleteGroup)
	post("/group/reset", s.resetGroup)
	get("/producers", s.producersPage)
	get("/messages", s.messagesPage)
	get("/message", s.messagePage)
	post("/message/resend", s.resendMessage)
	get("/dlq", s.dlqPage)
	get("/trace", s.tracePage)
	get("/acl", s.aclPage)               // ops.go
	get("/controller", s.controllerPage) // ops.go
	get("/login", s.loginPage)           // session.go
	post("/login", s.login)
	post("/logout", s.logout)
	return s.guard(mux)
}

// guard refuses oversize queries and answers unknown paths with the
// console's own 404 page.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.RawQuery) > maxQuery {
			s.fail(w, r, badRequest("the query is too long (%d bytes, at most %d)", len(r.URL.RawQuery), maxQuery), http.StatusRequestURITooLong)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxQuery)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
		next.ServeHTTP(w, r)
	})
}

// view is what every page template gets.
type view struct {
	Title  string
	Active string // menu entry
	CSRF   string
	Flash  string
	Data   any
}

// httpError carries a status with a message for the user.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

// statusOf maps an error to an HTTP status: ours as given, admin's
// ErrNotFound 404, a broker's refusal 502 with its remark, else 502.
func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.status
	}
	if errors.Is(err, admin.ErrNotFound) {
		return http.StatusNotFound
	}
	if refused(err) {
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}

// page wraps a GET handler: it returns the template name and its data.
func (s *Server) page(h func(w http.ResponseWriter, r *http.Request) (string, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, data, err := h(w, r)
		if err == errRedirected {
			return
		}
		if err != nil {
			s.fail(w, r, err, statusOf(err))
			return
		}
		s.render(w, r, http.StatusOK, name, data)
	}
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t := s.tmpl[name]
	v := view{Title: titles[name], Active: active[name], CSRF: s.csrfToken(w, r), Flash: r.URL.Query().Get("ok"), Data: data}
	var sb strings.Builder
	if err := t.Execute(&sb, v); err != nil {
		s.logger.Error("render", "page", name, "err", err)
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(sb.String()))
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, status int) {
	if status >= 500 {
		s.logger.Warn("console request failed", "path", r.URL.Path, "err", err)
	}
	s.render(w, r, status, "error", struct {
		Status int
		Text   string
		Msg    string
		Login  bool // the cluster refused us: offer the login
	}{status, http.StatusText(status), err.Error(), refused(err) || status == http.StatusUnauthorized})
}

var titles = map[string]string{
	"dashboard": "Dashboard", "cluster": "Cluster", "broker": "Broker", "topics": "Topics", "topic": "Topic",
	"groups": "Consumer groups", "group": "Consumer group", "producers": "Producers", "messages": "Messages",
	"message": "Message", "dlq": "Dead-letter queues", "trace": "Message trace", "error": "Error", "login": "Login",
	"acl": "ACL users and policies", "controller": "Controller",
	"lite": "Lite topics", "liteparent": "Lite parent topic", "litetopic": "Lite topic",
}

var active = map[string]string{
	"dashboard": "dashboard", "cluster": "cluster", "broker": "cluster", "topics": "topics", "topic": "topics",
	"groups": "groups", "group": "groups", "producers": "producers", "messages": "messages", "message": "messages",
	"dlq": "dlq", "trace": "trace", "login": "login", "acl": "acl", "controller": "controller",
	"lite": "lite", "liteparent": "lite", "litetopic": "lite",
}

// CSRF: double-submit. A random token lives in a SameSite=Strict cookie;
// every form repeats it; a POST whose form value differs is refused.

const csrfCookie = "apogee_csrf"

func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return tok
}

func (s *Server) checkCSRF(r *http.Request) error {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) != 32 {
		return &httpError{http.StatusForbidden, "missing CSRF cookie: reload the page and submit the form again"}
	}
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		return &httpError{http.StatusForbidden, "CSRF token mismatch: reload the page and submit the form again"}
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return &httpError{http.StatusForbidden, "cross-origin form refused"}
		}
	}
	return nil
}

// write wraps a POST handler: CSRF check, then the handler, which returns
// where to go next (a 303 redirect).
func (s *Server) write(h func(w http.ResponseWriter, r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, badRequest("bad form: %v", err), http.StatusBadRequest)
			return
		}
		if err := s.checkCSRF(r); err != nil {
			s.fail(w, r, err, statusOf(err))
			return
		}
		next, err := h(w, r)
		if err != nil {
			s.fail(w, r, err, statusOf(err))
			return
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.Timeout+5*time.Second)
}

// Start starts the admin client, listens and serves.
func (s *Server) Start() error {
	if err := s.adm.Start(); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		s.adm.Close()
		return fmt.Errorf("console: listen %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() { // owned by s: Close stops it and waits on done
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("console stopped", "err", err)
		}
	}()
	s.logger.Info("console listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the listening address; valid after Start.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops serving and waits; idempotent.
func (s *Server) Close() error {
	var errs []error
	if s.srv != nil {
		errs = append(errs, s.srv.Close())
		<-s.done
		s.srv = nil
	}
	s.mu.Lock()
	if s.producer != nil {
		errs = append(errs, s.producer.Close())
		s.producer = nil
	}
	s.mu.Unlock()
	s.closeSessions()
	errs = append(errs, s.adm.Close())
	return errors.Join(errs...)
}

// testProducer returns the producer of test messages, started on first
// use: the session's (signing with its credentials) or the console's.
func (s *Server) testProducer(r *http.Request) (*client.Producer, error) {
	ss := s.session(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := &s.producer
	opts := []client.ProducerOpt{client.WithNameServers(s.cfg.NameServers...)}
	if ss != nil {
		if ss.closed {
			return nil, &httpError{http.StatusUnauthorized, "the session ended: log in again"}
		}
		slot = &ss.producer
		opts = append(opts, client.WithCredentials(ss.user, ss.secret))
	}
	if *slot != nil {
		return *slot, nil
	}
	p, err := client.NewProducer("APOGEE_CONSOLE_PRODUCER", opts...)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	*slot = p
	return p, nil
}
