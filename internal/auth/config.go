package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AuthConfig holds the ACL 2.0 keys of broker.conf (and namesrv.conf) under
// RocketMQ's names and defaults (AuthConfig). The broker and the name
// server embed it.
type AuthConfig struct {
	// AuthenticationEnabled: every request must carry a valid signature
	// (false).
	AuthenticationEnabled bool `conf:"authenticationEnabled"`
	// AuthenticationWhitelist: request codes (comma-separated numbers)
	// exempt from authentication.
	AuthenticationWhitelist string `conf:"authenticationWhitelist"`
	// AuthenticationStrategy: Stateless (default) verifies every request's
	// signature; Stateful verifies a connection's first request of a user
	// and then trusts that connection's requests for that user for
	// StatefulAuthenticationCacheExpiredSecond, until any user or ACL
	// changes. RocketMQ's class names (...StatelessAuthenticationStrategy,
	// ...StatefulAuthenticationStrategy) are accepted too.
	AuthenticationStrategy string `conf:"authenticationStrategy"`
	// StatefulAuthenticationCacheExpiredSecond (60).
	StatefulAuthenticationCacheExpiredSecond int `conf:"statefulAuthenticationCacheExpiredSecond"`
	// InitAuthenticationUser, e.g. {"username":"rocketmq","password":"12345678"},
	// is created as a Super user at start unless a user of that name exists.
	InitAuthenticationUser string `conf:"initAuthenticationUser"`
	// InnerClientAuthenticationCredentials, {"accessKey":...,"secretKey":...},
	// is what the server's own clients sign with (name-server registration,
	// slave sync); also created as a Super user at start.
	InnerClientAuthenticationCredentials string `conf:"innerClientAuthenticationCredentials"`
	// AuthorizationEnabled: requests are checked against the ACLs (false).
	AuthorizationEnabled bool `conf:"authorizationEnabled"`
	// AuthorizationWhitelist: request codes exempt from authorization.
	AuthorizationWhitelist string `conf:"authorizationWhitelist"`
	// MigrateAuthFromV1Enabled: at start, copy the users and permissions of
	// an ACL 1.0 plain_acl.yml (in the config directory) once.
	MigrateAuthFromV1Enabled bool `conf:"migrateAuthFromV1Enabled"`
	// AuthConfigPath is the directory of auth.json; default
	// <storePathRootDir>/config/acl (an Apogee default: RocketMQ keeps a
	// RocksDB there).
	AuthConfigPath string `conf:"authConfigPath"`
}

// Enabled reports whether either check is on.
func (c *AuthConfig) Enabled() bool { return c.AuthenticationEnabled || c.AuthorizationEnabled }

// Validate parses the JSON and list values; every error names the key.
func (c *AuthConfig) Validate() error {
	var errs []error
	if _, err := c.InitUser(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.InnerCredentials(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseCodes("authenticationWhitelist", c.AuthenticationWhitelist); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseCodes("authorizationWhitelist", c.AuthorizationWhitelist); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.stateful(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// InitUser parses InitAuthenticationUser; nil when unset. The user is
// Super whatever the JSON says, as in RocketMQ.
func (c *AuthConfig) InitUser() (*User, error) {
	if strings.TrimSpace(c.InitAuthenticationUser) == "" {
		return nil, nil
	}
	var ui UserInfo
	if err := json.Unmarshal([]byte(c.InitAuthenticationUser), &ui); err != nil || ui.Username == "" || ui.Password == "" {
		return nil, fmt.Errorf("auth: config initAuthenticationUser: want {\"username\":...,\"password\":...}")
	}
	return &User{Username: ui.Username, Password: ui.Password, Type: UserSuper}, nil
}

// InnerCredentials parses InnerClientAuthenticationCredentials; nil when
// unset.
func (c *AuthConfig) InnerCredentials() (*Signer, error) {
	if strings.TrimSpace(c.InnerClientAuthenticationCredentials) == "" {
		return nil, nil
	}
	var cred struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	if err := json.Unmarshal([]byte(c.InnerClientAuthenticationCredentials), &cred); err != nil || cred.AccessKey == "" || cred.SecretKey == "" {
		return nil, fmt.Errorf("auth: config innerClientAuthenticationCredentials: want {\"accessKey\":...,\"secretKey\":...}")
	}
	return &Signer{AccessKey: cred.AccessKey, SecretKey: cred.SecretKey}, nil
}

// parseCodes reads a comma-separated list of request codes.
func parseCodes(key, list string) (map[int32]bool, error) {
	out := map[int32]bool{}
	for part := range strings.SplitSeq(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.ParseInt(part, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("auth: config %s=%s: %q is not a request code", key, list, part)
		}
		out[int32(n)] = true
	}
	return out, nil
}

// MaskSecrets replaces the values of the keys that carry secrets
// (initAuthenticationUser, innerClientAuthenticationCredentials) in a
// rendered configuration, for logs and GET_BROKER_CONFIG.
func MaskSecrets(m map[string]string) {
	for _, k := range []string{"initAuthenticationUser", "innerClientAuthenticationCredentials"} {
		if m[k] != "" {
			m[k] = "******"
		}
	}
}

// stateful parses AuthenticationStrategy.
func (c *AuthConfig) stateful() (bool, error) {
	s := c.AuthenticationStrategy
	if i := strings.LastIndex(s, "."); i >= 0 {
		s = s[i+1:]
	}
	switch strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "AuthenticationStrategy")) {
	case "", "stateless":
		return false, nil
	case "stateful":
		return true, nil
	}
	return false, fmt.Errorf("auth: config authenticationStrategy=%s: want Stateless or Stateful", c.AuthenticationStrategy)
}
