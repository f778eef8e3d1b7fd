package auth

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// UserType says whether a user bypasses authorization (Super) or is
// checked against its ACL (Normal). Names as RocketMQ spells them.
type UserType uint8

const (
	UserNormal UserType = iota // "Normal": the default
	UserSuper                  // "Super": passes every authorization check
)

func (t UserType) String() string {
	if t == UserSuper {
		return "Super"
	}
	return "Normal"
}

// ParseUserType reads "Super" or "Normal" (any case); "" is Normal.
func ParseUserType(s string) (UserType, error) {
	switch {
	case s == "" || strings.EqualFold(s, "Normal"):
		return UserNormal, nil
	case strings.EqualFold(s, "Super"):
		return UserSuper, nil
	}
	return 0, refusef("The user type %s is illegal.", s)
}

// UserStatus: a disabled user fails authentication.
type UserStatus uint8

const (
	StatusEnable  UserStatus = iota // "enable"
	StatusDisable                   // "disable"
)

func (s UserStatus) String() string {
	if s == StatusDisable {
		return "disable"
	}
	return "enable"
}

// ParseUserStatus reads "enable" or "disable" (any case); "" is enable.
func ParseUserStatus(s string) (UserStatus, error) {
	switch {
	case s == "" || strings.EqualFold(s, "enable"):
		return StatusEnable, nil
	case strings.EqualFold(s, "disable"):
		return StatusDisable, nil
	}
	return 0, refusef("The user status %s is illegal.", s)
}

// User is one account. Password is the secret key requests are signed
// with (the access key is Username); it is stored because HMAC
// verification needs it, and it never leaves the broker in a response.
type User struct {
	Username string
	Password string
	Type     UserType
	Status   UserStatus
}

// SubjectKey is "User:<name>", the key its ACL is stored under.
func (u User) SubjectKey() string { return subjectUserPrefix + u.Username }

const subjectUserPrefix = "User:"

// ParseSubject reads "User:<name>" (the only subject type RocketMQ has)
// and returns the user name.
func ParseSubject(s string) (string, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || !strings.EqualFold(typ, "User") || name == "" {
		return "", refusef("The subject %s is illegal.", s)
	}
	return name, nil
}

// Action is what a request does to a resource. Part of the wire and file
// formats by name.
type Action uint8

const (
	ActionUnknown Action = iota
	ActionAll            // "All": in a policy, every action
	ActionAny            // "Any": in a check, matched by any action of a policy
	ActionPub
	ActionSub
	ActionCreate
	ActionUpdate
	ActionDelete
	ActionGet
	ActionList
)

var actionNames = [...]string{"Unknown", "All", "Any", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "Unknown"
}

// ParseAction reads an action name, any case.
func ParseAction(s string) (Action, error) {
	for i, n := range actionNames {
		if i > 0 && strings.EqualFold(n, s) {
			return Action(i), nil
		}
	}
	return ActionUnknown, refusef("The action %s is illegal.", s)
}

// ParseActions reads a comma-separated list ("Pub,Sub").
func ParseActions(list []string) ([]Action, error) {
	var out []Action
	for _, s := range list {
		for part := range strings.SplitSeq(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a, err := ParseAction(part)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// ResourceType is the kind of thing a policy names.
type ResourceType uint8

const (
	ResourceUnknown ResourceType = iota
	ResourceAny                  // "*": every resource of every type
	ResourceCluster
	ResourceNamespace
	ResourceTopic
	ResourceGroup
)

var resourceTypeNames = [...]string{"Unknown", "Any", "Cluster", "Namespace", "Topic", "Group"}

func (t ResourceType) String() string {
	if int(t) < len(resourceTypeNames) {
		return resourceTypeNames[t]
	}
	return "Unknown"
}

// Pattern says how a policy's resource name matches a request's.
type Pattern uint8

const (
	PatternLiteral  Pattern = iota // "Topic:orders": that name only
	PatternPrefixed                // "Topic:orders*": names starting with "orders"
	PatternAny                     // "Topic:*": every name of the type
)

// Resource is a policy's resource (any pattern) or a request's (always a
// literal name).
type Resource struct {
	Type    ResourceType
	Name    string // "" for PatternAny and ResourceAny
	Pattern Pattern
}

// Topic and Group build a request's literal resources.
func Topic(name string) Resource   { return Resource{Type: ResourceTopic, Name: name} }
func Group(name string) Resource   { return Resource{Type: ResourceGroup, Name: name} }
func Cluster(name string) Resource { return Resource{Type: ResourceCluster, Name: name} }

// ParseResource reads a resource key: "*", "Topic:orders", "Topic:orders*",
// "Group:*", "Cluster:DefaultCluster" (type names in any case).
func ParseResource(key string) (Resource, error) {
	key = strings.TrimSpace(key)
	if key == "*" {
		return Resource{Type: ResourceAny, Pattern: PatternAny}, nil
	}
	typ, name, ok := strings.Cut(key, ":")
	if !ok {
		return Resource{}, refusef("The resource %s is illegal.", key)
	}
	r := Resource{Type: ResourceUnknown}
	for i, n := range resourceTypeNames {
		if i > int(ResourceAny) && strings.EqualFold(n, typ) {
			r.Type = ResourceType(i)
		}
	}
	if r.Type == ResourceUnknown || name == "" {
		return Resource{}, refusef("The resource %s is illegal.", key)
	}
	switch {
	case name == "*":
		r.Pattern = PatternAny
	case strings.HasSuffix(name, "*"):
		r.Pattern, r.Name = PatternPrefixed, strings.TrimSuffix(name, "*")
	default:
		r.Name = name
	}
	return r, nil
}

// Key renders the resource as ParseResource reads it.
func (r Resource) Key() string {
	if r.Type == ResourceAny {
		return "*"
	}
	switch r.Pattern {
	case PatternAny:
		return r.Type.String() + ":*"
	case PatternPrefixed:
		return r.Type.String() + ":" + r.Name + "*"
	}
	return r.Type.String() + ":" + r.Name
}

func (r Resource) String() string { return r.Key() }

// Matches reports whether policy resource r covers the request's literal
// resource req.
func (r Resource) Matches(req Resource) bool {
	if r.Type == ResourceAny {
		return true
	}
	if r.Type != req.Type {
		return false
	}
	switch r.Pattern {
	case PatternAny:
		return true
	case PatternPrefixed:
		return strings.HasPrefix(req.Name, r.Name)
	}
	return r.Name == req.Name
}

// specificity orders matching resources: a literal name beats any prefix,
// a longer prefix beats a shorter one, a prefix beats "Type:*", which
// beats "*". Matching literals of one request are all the same resource,
// so equal specificity means equal resources or equal-length prefixes.
func (r Resource) specificity() int {
	switch {
	case r.Type == ResourceAny:
		return 0
	case r.Pattern == PatternAny:
		return 1
	case r.Pattern == PatternPrefixed:
		return 2 + len(r.Name)
	}
	return int(^uint(0) >> 1)
}

// Decision is a policy entry's verdict.
type Decision uint8

const (
	Allow Decision = iota + 1 // "Allow"
	Deny                      // "Deny": wins over Allow at equal specificity
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "Unknown"
}

// ParseDecision reads "Allow" or "Deny", any case.
func ParseDecision(s string) (Decision, error) {
	switch {
	case strings.EqualFold(s, "Allow"):
		return Allow, nil
	case strings.EqualFold(s, "Deny"):
		return Deny, nil
	}
	return 0, refusef("The decision is null or illegal.")
}

// PolicyType: Custom policies are the ones operators write; Default ones
// apply only when no Custom entry matches (RocketMQ's two types).
type PolicyType uint8

const (
	PolicyCustom PolicyType = iota
	PolicyDefault
)

func (p PolicyType) String() string {
	if p == PolicyDefault {
		return "Default"
	}
	return "Custom"
}

// ParsePolicyType reads "Custom" or "Default", any case; "" is Custom.
func ParsePolicyType(s string) (PolicyType, error) {
	switch {
	case s == "" || strings.EqualFold(s, "Custom"):
		return PolicyCustom, nil
	case strings.EqualFold(s, "Default"):
		return PolicyDefault, nil
	}
	return 0, refusef("The policy type %s is illegal.", s)
}

// Entry is one policy line: resource, actions, optional source IPs,
// decision.
type Entry struct {
	Resource  Resource
	Actions   []Action
	SourceIPs []string // addresses or CIDR prefixes as given; empty = from anywhere
	Decision  Decision

	prefixes []netip.Prefix // parsed SourceIPs; set by validate
}

// Policy is the entries of one type.
type Policy struct {
	Type    PolicyType
	Entries []Entry
}

// ACL is every policy of one subject.
type ACL struct {
	Subject  string // "User:<name>"
	Policies []Policy
}

// validate checks an entry as RocketMQ's AuthorizationMetadataManager does
// and parses its source IPs.
func (e *Entry) validate() error {
	if e.Resource.Type == ResourceUnknown {
		return refusef("The resource is null.")
	}
	if len(e.Actions) == 0 {
		return refusef("The actions is empty.")
	}
	if slices.Contains(e.Actions, ActionAny) {
		return refusef("The actions can not be Any.")
	}
	if slices.Contains(e.Actions, ActionUnknown) {
		return refusef("The actions is illegal.")
	}
	if e.Decision != Allow && e.Decision != Deny {
		return refusef("The decision is null or illegal.")
	}
	e.prefixes = e.prefixes[:0]
	for _, ip := range e.SourceIPs {
		p, err := parseSourceIP(ip)
		if err != nil {
			return err
		}
		e.prefixes = append(e.prefixes, p)
	}
	return nil
}

// parseSourceIP reads "10.0.0.1", "10.0.0.0/8" or "::1".
func parseSourceIP(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Prefix{}, refusef("The source ip is empty.")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, refusef("The source ip is invalid.")
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, refusef("The source ip is invalid.")
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// matchesActions: the entry grants (or denies) one of the requested
// actions. ActionAny in the request matches any entry.
func (e *Entry) matchesActions(want []Action) bool {
	if len(e.Actions) == 0 {
		return false
	}
	for _, w := range want {
		if w == ActionAny {
			return true
		}
		for _, a := range e.Actions {
			if a == w || a == ActionAll {
				return true
			}
		}
	}
	return false
}

// matchesSource: no source IPs means from anywhere; otherwise the peer
// must be inside one. An unknown peer address matches only entries without
// source IPs.
func (e *Entry) matchesSource(ip netip.Addr) bool {
	if len(e.prefixes) == 0 {
		return true
	}
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap()
	for _, p := range e.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// actionsString renders actions as "Pub,Sub".
func actionsString(as []Action) string {
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(a.String())
	}
	return b.String()
}

// Error is a refusal in RocketMQ's words (its AuthenticationException and
// AuthorizationException messages). Servers answer it NO_PERMISSION (16)
// with Msg as the remark.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func refusef(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}
