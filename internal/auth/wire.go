package auth

// UserInfo is the JSON body of AUTH_CREATE_USER / AUTH_UPDATE_USER (request)
// and AUTH_GET_USER / AUTH_LIST_USER (response), RocketMQ's UserInfo.
// Responses never carry the password.
type UserInfo struct {
	Username   string `json:"username"`
	Password   string `json:"password,omitempty"`
	UserType   string `json:"userType,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
}

// UserToInfo renders u; withPassword only for the store's own file.
func UserToInfo(u User, withPassword bool) UserInfo {
	ui := UserInfo{Username: u.Username, UserType: u.Type.String(), UserStatus: u.Status.String()}
	if withPassword {
		ui.Password = u.Password
	}
	return ui
}

// User parses ui (absent type: Normal; absent status: enable).
func (ui UserInfo) User() (User, error) {
	t, err := ParseUserType(ui.UserType)
	if err != nil {
		return User{}, err
	}
	st, err := ParseUserStatus(ui.UserStatus)
	if err != nil {
		return User{}, err
	}
	return User{Username: ui.Username, Password: ui.Password, Type: t, Status: st}, nil
}

// Update turns ui into a partial update: only the fields it sets.
func (ui UserInfo) Update() (UserUpdate, error) {
	up := UserUpdate{Password: ui.Password}
	if ui.UserType != "" {
		t, err := ParseUserType(ui.UserType)
		if err != nil {
			return UserUpdate{}, err
		}
		up.Type = &t
	}
	if ui.UserStatus != "" {
		st, err := ParseUserStatus(ui.UserStatus)
		if err != nil {
			return UserUpdate{}, err
		}
		up.Status = &st
	}
	return up, nil
}

// ACLInfo is the JSON body of AUTH_CREATE_ACL / AUTH_UPDATE_ACL (request)
// and AUTH_GET_ACL / AUTH_LIST_ACL (response), RocketMQ's AclInfo.
type ACLInfo struct {
	Subject  string       `json:"subject"`
	Policies []PolicyInfo `json:"policies"`
}

// PolicyInfo is one policy of an ACLInfo.
type PolicyInfo struct {
	PolicyType string      `json:"policyType"`
	Entries    []EntryInfo `json:"entries"`
}

// EntryInfo is one entry of a PolicyInfo.
type EntryInfo struct {
	Resource  string   `json:"resource"`
	Actions   []string `json:"actions"`
	SourceIPs []string `json:"sourceIps,omitempty"`
	Decision  string   `json:"decision"`
}

// ACLToInfo renders a.
func ACLToInfo(a ACL) ACLInfo {
	ai := ACLInfo{Subject: a.Subject, Policies: []PolicyInfo{}}
	for _, p := range a.Policies {
		pi := PolicyInfo{PolicyType: p.Type.String(), Entries: []EntryInfo{}}
		for _, e := range p.Entries {
			ei := EntryInfo{Resource: e.Resource.Key(), Decision: e.Decision.String(), SourceIPs: e.SourceIPs}
			for _, act := range e.Actions {
				ei.Actions = append(ei.Actions, act.String())
			}
			pi.Entries = append(pi.Entries, ei)
		}
		ai.Policies = append(ai.Policies, pi)
	}
	return ai
}

// ACL parses ai; entries are validated (and their source IPs parsed).
func (ai ACLInfo) ACL() (ACL, error) {
	a := ACL{Subject: ai.Subject}
	for _, pi := range ai.Policies {
		t, err := ParsePolicyType(pi.PolicyType)
		if err != nil {
			return ACL{}, err
		}
		p := Policy{Type: t}
		for _, ei := range pi.Entries {
			e, err := ei.entry()
			if err != nil {
				return ACL{}, err
			}
			p.Entries = append(p.Entries, e)
		}
		a.Policies = append(a.Policies, p)
	}
	return a, nil
}

func (ei EntryInfo) entry() (Entry, error) {
	r, err := ParseResource(ei.Resource)
	if err != nil {
		return Entry{}, err
	}
	acts, err := ParseActions(ei.Actions)
	if err != nil {
		return Entry{}, err
	}
	d, err := ParseDecision(ei.Decision)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Resource: r, Actions: acts, SourceIPs: ei.SourceIPs, Decision: d}
	if err := e.validate(); err != nil {
		return Entry{}, err
	}
	return e, nil
}
