package auth

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// PlainAccount is one account of an ACL 1.0 plain_acl.yml.
type PlainAccount struct {
	AccessKey        string
	SecretKey        string
	Admin            bool
	DefaultTopicPerm string
	DefaultGroupPerm string
	TopicPerms       []string // "topic=PUB|SUB"
	GroupPerms       []string // "group=SUB"
}

// MigrateV1 reads the ACL 1.0 file at path and creates, for every account
// whose user does not exist yet, the user (Super when admin) and its ACL,
// as RocketMQ's AuthMigrator: topicPerms/groupPerms become Custom entries,
// defaultTopicPerm/defaultGroupPerm become Default entries on "Topic:*" /
// "Group:*"; PUB, SUB, PUB|SUB map to actions, DENY to a Deny of All. An
// absent file migrates nothing. It returns how many accounts it created.
func MigrateV1(path string, s *Store) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("auth: migrate: %w", err)
	}
	accounts, err := ParsePlainACL(data)
	if err != nil {
		return 0, fmt.Errorf("auth: migrate %s: %w", path, err)
	}
	n := 0
	for _, a := range accounts {
		if a.AccessKey == "" || a.SecretKey == "" {
			continue
		}
		if _, ok := s.User(a.AccessKey); ok {
			continue
		}
		u := User{Username: a.AccessKey, Password: a.SecretKey}
		if a.Admin {
			u.Type = UserSuper
		}
		if err := s.CreateUser(u); err != nil {
			return n, fmt.Errorf("auth: migrate %s: %w", a.AccessKey, err)
		}
		n++
		acl := ACL{Subject: u.SubjectKey()}
		var custom, def Policy
		custom.Type, def.Type = PolicyCustom, PolicyDefault
		for _, list := range []struct {
			perms []string
			typ   ResourceType
		}{{a.TopicPerms, ResourceTopic}, {a.GroupPerms, ResourceGroup}} {
			for _, p := range list.perms {
				name, perm, ok := strings.Cut(p, "=")
				name, perm = strings.TrimSpace(name), strings.TrimSpace(perm)
				if !ok || name == "" {
					continue
				}
				custom.Entries = append(custom.Entries, v1Entry(Resource{Type: list.typ, Name: groupOfType(list.typ, name)}, perm))
			}
		}
		if p := strings.TrimSpace(a.DefaultTopicPerm); p != "" {
			def.Entries = append(def.Entries, v1Entry(Resource{Type: ResourceTopic, Pattern: PatternAny}, p))
		}
		if p := strings.TrimSpace(a.DefaultGroupPerm); p != "" {
			def.Entries = append(def.Entries, v1Entry(Resource{Type: ResourceGroup, Pattern: PatternAny}, p))
		}
		for _, p := range []Policy{custom, def} {
			if len(p.Entries) > 0 {
				acl.Policies = append(acl.Policies, p)
			}
		}
		if len(acl.Policies) > 0 {
			if err := s.PutACL(acl); err != nil {
				return n, fmt.Errorf("auth: migrate %s: %w", a.AccessKey, err)
			}
		}
	}
	return n, nil
}

func groupOfType(t ResourceType, name string) string {
	if t == ResourceGroup {
		return groupOf(name)
	}
	return name
}

// v1Entry maps an ACL 1.0 permission to an entry.
func v1Entry(r Resource, perm string) Entry {
	e := Entry{Resource: r, Decision: Allow}
	switch perm {
	case "PUB":
		e.Actions = []Action{ActionPub}
	case "SUB":
		e.Actions = []Action{ActionSub}
	case "PUB|SUB", "SUB|PUB":
		e.Actions = []Action{ActionPub, ActionSub}
	case "DENY":
		e.Actions, e.Decision = []Action{ActionAll}, Deny
	default:
		e.Actions = []Action{ActionAll}
	}
	return e
}

// ParsePlainACL reads the subset of YAML plain_acl.yml files use: a
// top-level "accounts:" list of maps whose values are scalars or lists of
// scalars ("- x" lines or "[a, b]"). Other top-level keys are skipped.
func ParsePlainACL(data []byte) ([]PlainAccount, error) {
	var (
		out       []PlainAccount
		cur       *PlainAccount
		inAcc     bool
		listKey   string // key whose "- item" lines follow
		accIndent = -1
	)
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimRight(stripComment(raw), " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := strings.TrimSpace(line)
		if indent == 0 {
			inAcc, cur, listKey = strings.HasPrefix(text, "accounts:"), nil, ""
			continue
		}
		if !inAcc {
			continue
		}
		if strings.HasPrefix(text, "- ") || text == "-" {
			item := strings.TrimSpace(strings.TrimPrefix(text, "-"))
			if accIndent < 0 || indent <= accIndent {
				// A new account; the rest of the line may be its first key.
				accIndent = indent
				out = append(out, PlainAccount{})
				cur = &out[len(out)-1]
				listKey = ""
				if item == "" {
					continue
				}
				text = item
			} else {
				if cur == nil || listKey == "" {
					return nil, fmt.Errorf("line %d: list item outside a list", i+1)
				}
				cur.add(listKey, unquote(item))
				continue
			}
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: key outside an account", i+1)
		}
		k, v, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want key: value", i+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		listKey = ""
		switch {
		case v == "":
			listKey = k
		case strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]"):
			for item := range strings.SplitSeq(v[1:len(v)-1], ",") {
				if item = unquote(strings.TrimSpace(item)); item != "" {
					cur.add(k, item)
				}
			}
		default:
			cur.set(k, unquote(v))
		}
	}
	return out, nil
}

func (a *PlainAccount) set(k, v string) {
	switch k {
	case "accessKey":
		a.AccessKey = v
	case "secretKey":
		a.SecretKey = v
	case "admin":
		a.Admin = strings.EqualFold(v, "true")
	case "defaultTopicPerm":
		a.DefaultTopicPerm = v
	case "defaultGroupPerm":
		a.DefaultGroupPerm = v
	}
}

func (a *PlainAccount) add(k, v string) {
	switch k {
	case "topicPerms":
		a.TopicPerms = append(a.TopicPerms, v)
	case "groupPerms":
		a.GroupPerms = append(a.GroupPerms, v)
	}
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(s), "#") {
		return ""
	}
	return s
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}
