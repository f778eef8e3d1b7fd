package auth

import (
	"net/netip"
	"strings"
)

// Check is one authorization question a request asks: may the subject do
// one of Actions on Resource (a literal name)? A request may ask several
// (a pull asks for Sub on its topic and on its group); all must pass.
type Check struct {
	Resource Resource
	Actions  []Action // shared, read-only slices (see the act* variables)
}

// Shared action sets for checks: never modified, so checks need no
// allocation for them.
var (
	actPub       = []Action{ActionPub}
	actSub       = []Action{ActionSub}
	actSubGet    = []Action{ActionSub, ActionGet}
	actSubUpdate = []Action{ActionSub, ActionUpdate}
	actPubSubGet = []Action{ActionPub, ActionSub, ActionGet}
	actCreate    = []Action{ActionCreate}
	actUpdate    = []Action{ActionUpdate}
	actDelete    = []Action{ActionDelete}
	actGet       = []Action{ActionGet}
)

// SystemRules names the system resources every authenticated user may use
// without a policy, because RocketMQ clients touch them on their own (the
// complaint behind apache/rocketmq#8694, #9138, #10370: ACL 2.0 silently
// breaking tracing and retries until someone grants them by hand). Retry
// and DLQ topics need no rule: checks map them to their group (see
// groupOf), so Sub on the group covers them.
type SystemRules struct {
	// TraceTopic (msgTraceTopicName, RMQ_SYS_TRACE_TOPIC): clients with
	// tracing on publish their traces there.
	TraceTopic string
	// Cluster: its "<cluster>_REPLY_TOPIC" carries request-reply answers.
	Cluster string
}

// allows reports whether a system rule covers c. It applies only when no
// policy entry matched, so an explicit Deny still wins.
func (r SystemRules) allows(c Check) bool {
	if c.Resource.Type != ResourceTopic {
		return false
	}
	name := c.Resource.Name
	switch {
	case r.TraceTopic != "" && name == r.TraceTopic:
		return hasAction(c.Actions, ActionPub)
	case name == "TBW102":
		// The auto-create template: lookups only.
		return hasAction(c.Actions, ActionGet)
	case r.Cluster != "" && name == r.Cluster+"_REPLY_TOPIC":
		return hasAction(c.Actions, ActionPub) || hasAction(c.Actions, ActionSub)
	}
	return false
}

func hasAction(as []Action, a Action) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}

// authorize decides checks for username from ip against snapshot s.
//
// Rules (RocketMQ 5.3's AclAuthorizationHandler, without its order
// dependence, apache/rocketmq#9540): a Super user passes; otherwise, per
// check, among the Custom policy's entries that match the resource, the
// actions and the source IP, the most specific resource wins (literal >
// longer prefix > shorter prefix > "Type:*" > "*") and, at equal
// specificity, Deny wins over Allow. Default-policy entries are consulted
// only when no Custom entry matches; system rules only when no entry
// matches at all. The winner's decision is the answer; no match is a
// refusal.
func (s *snapshot) authorize(username string, checks []Check, ip netip.Addr, rules SystemRules) error {
	u := s.users[username]
	if u == nil {
		return refusef("User:%s not found.", username)
	}
	if u.user.Status == StatusDisable {
		return refusef("User:%s is disabled.", username)
	}
	if u.user.Type == UserSuper {
		return nil
	}
	acl := s.acls[username]
	for _, c := range checks {
		var best *Entry
		if acl != nil {
			best = bestEntry(acl, PolicyCustom, c, ip)
			if best == nil {
				best = bestEntry(acl, PolicyDefault, c, ip)
			}
		}
		switch {
		case best == nil && rules.allows(c):
			continue
		case best == nil:
			return denied(username, c, ip, "no matched policies.")
		case best.Decision == Deny:
			return denied(username, c, ip, "the decision is deny.")
		}
	}
	return nil
}

// bestEntry returns the winning entry of acl's policy of type t for c, or
// nil when none matches. The choice depends only on the set of matching
// entries, never on their order.
func bestEntry(acl *ACL, t PolicyType, c Check, ip netip.Addr) *Entry {
	var best *Entry
	bestSpec := -1
	for pi := range acl.Policies {
		p := &acl.Policies[pi]
		if p.Type != t {
			continue
		}
		for ei := range p.Entries {
			e := &p.Entries[ei]
			if !e.Resource.Matches(c.Resource) || !e.matchesActions(c.Actions) || !e.matchesSource(ip) {
				continue
			}
			spec := e.Resource.specificity()
			if spec > bestSpec || (spec == bestSpec && e.Decision == Deny) {
				best, bestSpec = e, spec
			}
		}
	}
	return best
}

// denied is RocketMQ's authorization refusal text.
func denied(username string, c Check, ip netip.Addr, detail string) *Error {
	src := ""
	if ip.IsValid() {
		src = ip.Unmap().String()
	}
	return refusef("User:%s has no permission to access %s from %s, %s", username, c.Resource.Key(), src, detail)
}

// groupOf returns the group a retry or DLQ topic belongs to, as RocketMQ's
// Resource.ofGroup strips "%RETRY%" / "%DLQ%".
func groupOf(name string) string {
	if g, ok := strings.CutPrefix(name, "%RETRY%"); ok {
		return g
	}
	if g, ok := strings.CutPrefix(name, "%DLQ%"); ok {
		return g
	}
	return name
}

func isRetryTopic(name string) bool { return strings.HasPrefix(name, "%RETRY%") }
func isDLQTopic(name string) bool   { return strings.HasPrefix(name, "%DLQ%") }
