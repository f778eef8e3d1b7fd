package auth

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Guard decides whether one remoting request may proceed: authentication
// (the signature) then authorization (the request's checks against the
// subject's ACL), as configured. Safe for concurrent use; it reads the
// store's current snapshot on every call, so user and policy changes
// apply to the next request of every open connection.
type Guard struct {
	cfg        AuthConfig
	verifier   *Verifier
	authnWhite map[int32]bool
	authzWhite map[int32]bool
	rules      SystemRules
	checks     sync.Pool // *[]Check scratch

	// Stateful authentication (authenticationStrategy=Stateful): conns
	// maps a connection id to the user its signature proved, valid while
	// the store's version is unchanged and until expires.
	stateful bool
	ttl      time.Duration
	conns    sync.Map // connection key -> connAuth
	now      func() time.Time
}

// connAuth is one connection's proven identity.
type connAuth struct {
	user    string
	version int64 // store version it was proven at: any user/ACL change re-verifies
	expires int64 // unix nanoseconds
}

// NewGuard returns a guard over store. open lists request codes that skip
// both checks on top of the configured whitelists (the name server's route
// and cluster-info queries).
func NewGuard(cfg AuthConfig, store *Store, rules SystemRules, open ...protocol.RequestCode) (*Guard, error) {
	authn, err := parseCodes("authenticationWhitelist", cfg.AuthenticationWhitelist)
	if err != nil {
		return nil, err
	}
	authz, err := parseCodes("authorizationWhitelist", cfg.AuthorizationWhitelist)
	if err != nil {
		return nil, err
	}
	for _, c := range open {
		authn[int32(c)] = true
		authz[int32(c)] = true
	}
	stateful, err := cfg.stateful()
	if err != nil {
		return nil, err
	}
	ttl := time.Duration(cfg.StatefulAuthenticationCacheExpiredSecond) * time.Second
	if ttl <= 0 {
		ttl = 60 * time.Second
	}
	g := &Guard{cfg: cfg, verifier: NewVerifier(store), authnWhite: authn, authzWhite: authz, rules: rules,
		stateful: stateful, ttl: ttl, now: time.Now}
	g.checks.New = func() any { s := make([]Check, 0, 8); return &s }
	return g, nil
}

// Store is the store the guard reads.
func (g *Guard) Store() *Store { return g.verifier.store }

// Verifier is the guard's signature verifier (for the gRPC endpoint).
func (g *Guard) Verifier() *Verifier { return g.verifier }

// Config is the guard's configuration.
func (g *Guard) Config() AuthConfig { return g.cfg }

// CheckRemoting authenticates and authorizes req from peer. It returns
// the authenticated username ("" when authentication is off or skipped)
// and a *Error refusal, which servers answer NO_PERMISSION with its text.
func (g *Guard) CheckRemoting(req *protocol.Command, peer netip.Addr) (string, error) {
	return g.CheckRemotingConn(req, peer, nil)
}

// CheckRemotingConn is CheckRemoting for a request that arrived on the
// connection identified by conn (a comparable value unique among the open
// connections of every server sharing the guard, e.g. its *remoting.Conn;
// nil = unknown): with the Stateful strategy a connection
// whose signature already proved the request's AccessKey skips the HMAC
// until the entry expires or any user or ACL changes. ForgetConn drops the
// entry when the connection closes.
func (g *Guard) CheckRemotingConn(req *protocol.Command, peer netip.Addr, conn any) (string, error) {
	user := ""
	if g.cfg.AuthenticationEnabled && !g.authnWhite[req.Code] {
		u, err := g.authenticate(req, conn)
		if err != nil {
			return u, err
		}
		user = u
	}
	if !g.cfg.AuthorizationEnabled || g.authzWhite[req.Code] {
		return user, nil
	}
	if user == "" {
		// Authentication off (or whitelisted): RocketMQ takes the subject
		// from AccessKey unverified.
		user = req.Ext(FieldAccessKey)
	}
	sp := g.checks.Get().(*[]Check)
	defer func() { *sp = (*sp)[:0]; g.checks.Put(sp) }()
	checks, err := RemotingChecks((*sp)[:0], req, g.rules.Cluster)
	*sp = checks
	if err != nil {
		return user, err
	}
	if len(checks) == 0 {
		return user, nil
	}
	if user == "" {
		return user, refusef("Authorization failed. Please verify your access rights and try again.")
	}
	return user, g.verifier.store.Authorize(user, checks, peer, g.rules)
}

// authenticate verifies req's signature, or finds conn's proof of it.
func (g *Guard) authenticate(req *protocol.Command, conn any) (string, error) {
	if !g.stateful || conn == nil {
		return g.verifier.AuthenticateRemoting(req)
	}
	ak := req.Ext(FieldAccessKey)
	version := g.verifier.store.Version()
	if v, ok := g.conns.Load(conn); ok {
		if e := v.(connAuth); ak != "" && e.user == ak && e.version == version && g.now().UnixNano() < e.expires {
			return ak, nil
		}
	}
	u, err := g.verifier.AuthenticateRemoting(req)
	if err != nil {
		return u, err
	}
	g.conns.Store(conn, connAuth{user: u, version: version, expires: g.now().Add(g.ttl).UnixNano()})
	return u, nil
}

// ForgetConn drops a closed connection's stateful entry.
func (g *Guard) ForgetConn(conn any) {
	if g.stateful {
		g.conns.Delete(conn)
	}
}

// CheckGRPC authenticates a 5.x request's metadata (authorization and
// x-mq-date-time) and authorizes checks. It returns the username.
func (g *Guard) CheckGRPC(authorization, dateTime string, checks []Check, peer netip.Addr) (string, error) {
	user := ""
	if g.cfg.AuthenticationEnabled {
		u, err := g.verifier.AuthenticateGRPC(authorization, dateTime)
		if err != nil {
			return u, err
		}
		user = u
	}
	if !g.cfg.AuthorizationEnabled || len(checks) == 0 {
		return user, nil
	}
	if user == "" {
		if c, err := ParseAuthorization(authorization); err == nil {
			user = c.AccessKey
		}
	}
	if user == "" {
		return user, refusef("Authorization failed. Please verify your access rights and try again.")
	}
	return user, g.verifier.store.Authorize(user, checks, peer, g.rules)
}

// Init creates the configured init and inner users (both Super) unless
// users of their names exist.
func Init(cfg AuthConfig, store *Store) error {
	u, err := cfg.InitUser()
	if err != nil {
		return err
	}
	if u != nil {
		if err := store.EnsureUser(*u); err != nil {
			return fmt.Errorf("auth: init user %s: %w", u.Username, err)
		}
	}
	s, err := cfg.InnerCredentials()
	if err != nil {
		return err
	}
	if s != nil {
		if err := store.EnsureUser(User{Username: s.AccessKey, Password: s.SecretKey, Type: UserSuper}); err != nil {
			return fmt.Errorf("auth: inner client user %s: %w", s.AccessKey, err)
		}
	}
	return nil
}
