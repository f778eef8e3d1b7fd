package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/tlsconf"
)

// ACL 2.0 management, with mqadmin's command names and flags:
// createUser|updateUser|deleteUser|getUser|listUser and
// createAcl|updateAcl|deleteAcl|getAcl|listAcl. Every admin command signs
// its requests with --ak/--sk and dials TLS with --tls.
func init() {
	adminCommands = append(adminCommands, cmdCreateUser, cmdUpdateUser, cmdDeleteUser, cmdGetUser, cmdListUser,
		cmdCreateACL, cmdUpdateACL, cmdDeleteACL, cmdGetACL, cmdListACL, cmdCopyUser, cmdCopyACL)
}

// secureFlags are the credentials and TLS flags of every admin command.
type secureFlags struct {
	accessKey, secretKey string
	tls                  bool
	tlsCA                string
}

func (s *secureFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.accessKey, "ak", os.Getenv("ROCKETMQ_ACCESS_KEY"), "access key: sign every request (ACL 2.0)")
	fs.StringVar(&s.secretKey, "sk", os.Getenv("ROCKETMQ_SECRET_KEY"), "secret key for --ak")
	fs.BoolVar(&s.tls, "tls", false, "connect with TLS")
	fs.StringVar(&s.tlsCA, "tlsCaCert", "", "with --tls: PEM file of the CA that signed the servers' certificates (default: do not verify them)")
}

func (s *secureFlags) adminOptions() ([]admin.Option, error) {
	var opts []admin.Option
	if s.accessKey != "" {
		if s.secretKey == "" {
			return nil, fmt.Errorf("--ak needs --sk")
		}
		opts = append(opts, admin.WithCredentials(s.accessKey, s.secretKey))
	}
	cfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, admin.WithTLS(cfg))
	}
	return opts, nil
}

// clientOptions are the SDK options of --ak/--sk and --tls (produce,
// consume).
func (s *secureFlags) clientOptions() ([]client.Opt, error) {
	var opts []client.Opt
	if s.accessKey != "" {
		if s.secretKey == "" {
			return nil, fmt.Errorf("--ak needs --sk")
		}
		opts = append(opts, client.WithCredentials(s.accessKey, s.secretKey))
	}
	cfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, client.WithTLS(cfg))
	}
	return opts, nil
}

// tlsConfig is the client TLS configuration of --tls / --tlsCaCert.
func (s *secureFlags) tlsConfig() (*tls.Config, error) {
	if !s.tls {
		return nil, nil
	}
	if s.tlsCA == "" {
		return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, nil
	}
	pem, err := os.ReadFile(s.tlsCA)
	if err != nil {
		return nil, fmt.Errorf("--tlsCaCert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tlsCaCert %s: no PEM certificate", s.tlsCA)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// authTargetFlags: -c CLUSTER or -b ADDR, as mqadmin's auth commands.
type authTargetFlags struct{ cluster, broker string }

func (t *authTargetFlags) register(c *cobra.Command, verb string) {
	c.Flags().StringVarP(&t.cluster, "clusterName", "c", "", verb+" on every broker of this cluster")
	c.Flags().StringVarP(&t.broker, "brokerAddr", "b", "", verb+" on this broker")
	c.MarkFlagsOneRequired("clusterName", "brokerAddr")
	c.MarkFlagsMutuallyExclusive("clusterName", "brokerAddr")
}

func (t *authTargetFlags) target() admin.Target { return target(t.cluster, t.broker) }

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func cmdCreateUser(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var u admin.User
	return adminCommand(g, af, "createUser", "Create an ACL 2.0 user on a cluster or broker", func(c *cobra.Command) {
		t.register(c, "create")
		c.Flags().StringVarP(&u.Username, "username", "u", "", "user name (the access key; required)")
		c.Flags().StringVarP(&u.Password, "password", "p", "", "password (the secret key; required)")
		c.Flags().StringVarP(&u.UserType, "userType", "t", "Normal", "Super or Normal")
		c.MarkFlagRequired("username")
		c.MarkFlagRequired("password")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.CreateUser(ctx, t.target(), u); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("create user %s success.", u.Username)}, nil
	})
}

func cmdUpdateUser(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var u admin.User
	return adminCommand(g, af, "updateUser", "Change an ACL 2.0 user's password, type or status", func(c *cobra.Command) {
		t.register(c, "update")
		c.Flags().StringVarP(&u.Username, "username", "u", "", "user name (required)")
		c.Flags().StringVarP(&u.Password, "password", "p", "", "new password")
		c.Flags().StringVarP(&u.UserType, "userType", "t", "", "new type: Super or Normal")
		c.Flags().StringVarP(&u.UserStatus, "userStatus", "s", "", "new status: enable or disable")
		c.MarkFlagRequired("username")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.UpdateUser(ctx, t.target(), u); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("update user %s success.", u.Username)}, nil
	})
}

func cmdDeleteUser(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var name string
	return adminCommand(g, af, "deleteUser", "Delete an ACL 2.0 user and its ACL", func(c *cobra.Command) {
		t.register(c, "delete")
		c.Flags().StringVarP(&name, "username", "u", "", "user name (required)")
		c.MarkFlagRequired("username")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.DeleteUser(ctx, t.target(), name); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("delete user %s success.", name)}, nil
	})
}

var userHeader = []string{"#Broker", "#Username", "#UserType", "#UserStatus"}

func userRow(broker string, u admin.User) []string {
	return []string{broker, u.Username, u.UserType, u.UserStatus}
}

func cmdGetUser(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var name string
	return adminCommand(g, af, "getUser", "Show an ACL 2.0 user (never its password)", func(c *cobra.Command) {
		t.register(c, "read")
		c.Flags().StringVarP(&name, "username", "u", "", "user name (required)")
		c.MarkFlagRequired("username")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		res, err := a.GetUser(ctx, t.target(), name)
		if err != nil {
			return nil, err
		}
		out := &result{value: res, header: userHeader}
		for _, r := range res {
			if r.Value != nil {
				out.rows = append(out.rows, userRow(r.Broker, *r.Value))
			}
		}
		if len(out.rows) == 0 {
			return nil, fmt.Errorf("user %s: %w", name, admin.ErrNotFound)
		}
		return out, nil
	})
}

func cmdListUser(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var filter string
	return adminCommand(g, af, "listUser", "List ACL 2.0 users, one per line", func(c *cobra.Command) {
		t.register(c, "list")
		c.Flags().StringVarP(&filter, "filter", "f", "", "only users whose name contains this")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		res, err := a.ListUsers(ctx, t.target(), filter)
		if err != nil {
			return nil, err
		}
		type row struct {
			Broker string `json:"broker"`
			admin.User
		}
		out := &result{header: userHeader}
		var rows []row
		for _, r := range res {
			for _, u := range r.Value {
				rows = append(rows, row{r.Broker, u})
				out.rows = append(out.rows, userRow(r.Broker, u))
			}
		}
		out.value = rows
		if rows == nil {
			out.value = []row{}
		}
		return out, nil
	})
}

// aclFlags are createAcl's and updateAcl's -s -r -a -d -i.
type aclFlags struct {
	subject, resources, actions, decision, sourceIPs string
}

func (f *aclFlags) register(c *cobra.Command) {
	c.Flags().StringVarP(&f.subject, "subject", "s", "", "subject, User:NAME (required)")
	c.Flags().StringVarP(&f.resources, "resources", "r", "", "resources, e.g. Topic:orders,Group:g1,Topic:app*,* (required)")
	c.Flags().StringVarP(&f.actions, "actions", "a", "", "actions: Pub,Sub,Create,Update,Delete,Get,List,All (required)")
	c.Flags().StringVarP(&f.decision, "decision", "d", "", "Allow or Deny (required)")
	c.Flags().StringVarP(&f.sourceIPs, "sourceIp", "i", "", "source IPs or CIDRs the entries apply to (default: any)")
	for _, n := range []string{"subject", "resources", "actions", "decision"} {
		c.MarkFlagRequired(n)
	}
}

func (f *aclFlags) request() admin.ACLRequest {
	return admin.ACLRequest{Subject: f.subject, Resources: splitList(f.resources), Actions: splitList(f.actions),
		SourceIPs: splitList(f.sourceIPs), Decision: f.decision}
}

func cmdCreateACL(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var f aclFlags
	return adminCommand(g, af, "createAcl", "Add ACL 2.0 entries for a subject", func(c *cobra.Command) {
		t.register(c, "create")
		f.register(c)
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.CreateACL(ctx, t.target(), f.request()); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("create acl to %s success.", f.subject)}, nil
	})
}

func cmdUpdateACL(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var f aclFlags
	return adminCommand(g, af, "updateAcl", "Replace the actions and decision of a subject's entries", func(c *cobra.Command) {
		t.register(c, "update")
		f.register(c)
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.UpdateACL(ctx, t.target(), f.request()); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("update acl to %s success.", f.subject)}, nil
	})
}

func cmdDeleteACL(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var subject, resources string
	return adminCommand(g, af, "deleteAcl", "Delete a subject's entries for resources, or its whole ACL", func(c *cobra.Command) {
		t.register(c, "delete")
		c.Flags().StringVarP(&subject, "subject", "s", "", "subject, User:NAME (required)")
		c.Flags().StringVarP(&resources, "resources", "r", "", "resources whose entries to delete (default: the whole ACL)")
		c.MarkFlagRequired("subject")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if err := a.DeleteACL(ctx, t.target(), subject, splitList(resources)); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("delete acl of %s success.", subject)}, nil
	})
}

var aclHeader = []string{"#Broker", "#Subject", "#PolicyType", "#Resource", "#Actions", "#SourceIp", "#Decision"}

// aclRows is one line per entry: subject, resource, actions, decision.
func aclRows(broker string, acl admin.ACL) [][]string {
	var rows [][]string
	for _, p := range acl.Policies {
		for _, e := range p.Entries {
			rows = append(rows, []string{broker, acl.Subject, p.PolicyType, e.Resource, strings.Join(e.Actions, ","),
				strings.Join(e.SourceIPs, ","), e.Decision})
		}
	}
	return rows
}

// aclEntryRow is the --json shape of one line.
type aclEntryRow struct {
	Broker     string   `json:"broker"`
	Subject    string   `json:"subject"`
	PolicyType string   `json:"policyType"`
	Resource   string   `json:"resource"`
	Actions    []string `json:"actions"`
	SourceIPs  []string `json:"sourceIps,omitempty"`
	Decision   string   `json:"decision"`
}

func aclResult(res []admin.BrokerResult[[]admin.ACL]) *result {
	out := &result{header: aclHeader}
	rows := []aclEntryRow{}
	for _, r := range res {
		for _, acl := range r.Value {
			out.rows = append(out.rows, aclRows(r.Broker, acl)...)
			for _, p := range acl.Policies {
				for _, e := range p.Entries {
					rows = append(rows, aclEntryRow{r.Broker, acl.Subject, p.PolicyType, e.Resource, e.Actions, e.SourceIPs, e.Decision})
				}
			}
		}
	}
	out.value = rows
	return out
}

func cmdGetACL(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var subject string
	return adminCommand(g, af, "getAcl", "Show a subject's ACL, one entry per line", func(c *cobra.Command) {
		t.register(c, "read")
		c.Flags().StringVarP(&subject, "subject", "s", "", "subject, User:NAME (required)")
		c.MarkFlagRequired("subject")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		res, err := a.GetACL(ctx, t.target(), subject)
		if err != nil {
			return nil, err
		}
		lists := make([]admin.BrokerResult[[]admin.ACL], 0, len(res))
		for _, r := range res {
			var l []admin.ACL
			if r.Value != nil {
				l = []admin.ACL{*r.Value}
			}
			lists = append(lists, admin.BrokerResult[[]admin.ACL]{Broker: r.Broker, Value: l})
		}
		return aclResult(lists), nil
	})
}

func cmdListACL(g *globalFlags, af *adminFlags) *cobra.Command {
	var t authTargetFlags
	var subject, resource string
	return adminCommand(g, af, "listAcl", "List ACL entries, one per line", func(c *cobra.Command) {
		t.register(c, "list")
		c.Flags().StringVarP(&subject, "subject", "s", "", "only subjects containing this")
		c.Flags().StringVarP(&resource, "resource", "r", "", "only entries whose resource contains this")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		res, err := a.ListACLs(ctx, t.target(), subject, resource)
		if err != nil {
			return nil, err
		}
		return aclResult(res), nil
	})
}

// maskedConfig hides the secrets of a rendered configuration before it is
// logged.
func maskedConfig(m map[string]string) map[string]string {
	auth.MaskSecrets(m)
	return m
}

// tlsEnforcing reports whether tlsMode is enforcing (a bad value already
// failed the broker's start).
func tlsEnforcing(mode string) bool {
	m, err := tlsconf.ParseMode(mode)
	return err == nil && m == tlsconf.Enforcing
}

// copyFlags are copyUser's and copyAcl's -f fromBroker, -t toBroker.
type copyFlags struct{ from, to string }

func (f *copyFlags) register(c *cobra.Command) {
	c.Flags().StringVarP(&f.from, "fromBroker", "f", "", "source broker address (required)")
	c.Flags().StringVarP(&f.to, "toBroker", "t", "", "target broker address (required)")
	c.MarkFlagRequired("fromBroker")
	c.MarkFlagRequired("toBroker")
}

func cmdCopyUser(g *globalFlags, af *adminFlags) *cobra.Command {
	var f copyFlags
	var users string
	return adminCommand(g, af, "copyUser", "Copy ACL 2.0 users with their passwords to another broker (sign as the inner-client user)", func(c *cobra.Command) {
		f.register(c)
		c.Flags().StringVarP(&users, "usernames", "u", "", "comma-separated user names (default: every user)")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		copied, err := a.CopyUsers(ctx, f.from, f.to, splitList(users))
		if err != nil {
			return nil, err
		}
		return &result{value: copied, text: fmt.Sprintf("copied %d users from %s to %s: %s", len(copied), f.from, f.to, strings.Join(copied, ", "))}, nil
	})
}

func cmdCopyACL(g *globalFlags, af *adminFlags) *cobra.Command {
	var f copyFlags
	var subjects string
	return adminCommand(g, af, "copyAcl", "Copy ACL 2.0 policies to another broker", func(c *cobra.Command) {
		f.register(c)
		c.Flags().StringVarP(&subjects, "subjects", "s", "", "comma-separated subjects, User:NAME (default: every ACL)")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		copied, err := a.CopyACLs(ctx, f.from, f.to, splitList(subjects))
		if err != nil {
			return nil, err
		}
		return &result{value: copied, text: fmt.Sprintf("copied %d ACLs from %s to %s: %s", len(copied), f.from, f.to, strings.Join(copied, ", "))}, nil
	})
}
