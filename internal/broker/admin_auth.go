package broker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// authProcessors serves the ACL 2.0 management codes (3001–3010) and the
// slave's copy of the whole auth state (AuthExportCode). Bodies are
// RocketMQ's UserInfo and AclInfo JSON; refusals are NO_PERMISSION with
// RocketMQ's remark. Changes are durable before they are answered and apply
// to the next request of every connection.
func (b *Broker) authProcessors() map[protocol.RequestCode]remoting.Processor {
	return map[protocol.RequestCode]remoting.Processor{
		protocol.AuthCreateUser: b.processCreateUser,
		protocol.AuthUpdateUser: b.processUpdateUser,
		protocol.AuthDeleteUser: b.processDeleteUser,
		protocol.AuthGetUser:    b.processGetUser,
		protocol.AuthListUser:   b.processListUser,
		protocol.AuthCreateACL:  b.processPutACL,
		protocol.AuthUpdateACL:  b.processPutACL,
		protocol.AuthDeleteACL:  b.processDeleteACL,
		protocol.AuthGetACL:     b.processGetACL,
		protocol.AuthListACL:    b.processListACL,
		AuthExportCode:          b.processAuthExport,
	}
}

// AuthExportCode (protocol.AuthExport) is an Apogee request: a slave asks
// its master for the whole auth state (users with their secrets, ACLs) in
// auth.json's format. Only the broker's own inner-client user may ask,
// whatever authenticationEnabled says, because the answer carries
// passwords.
const AuthExportCode = protocol.AuthExport

// authError maps a store refusal to NO_PERMISSION with its text, anything
// else (a failed write) to SYSTEM_ERROR.
func authError(err error) error {
	var ae *auth.Error
	if errors.As(err, &ae) {
		return protocol.Errorf(protocol.NoPermission, "%s", ae.Msg)
	}
	return protocol.Errorf(protocol.SystemError, "An system error occurred, please try again later.")
}

// callerIsNotSuper: the request is signed by a user who is not Super.
// Unsigned callers (authentication off) count as allowed, as in RocketMQ.
func (b *Broker) callerIsNotSuper(req *protocol.Command) bool {
	ak := req.Ext(auth.FieldAccessKey)
	return ak != "" && !b.auth.store.IsSuper(ak)
}

func (b *Broker) decodeUserInfo(req *protocol.Command) (auth.UserInfo, error) {
	name := req.Ext("username")
	if strings.TrimSpace(name) == "" {
		return auth.UserInfo{}, protocol.Errorf(protocol.InvalidParameter, "The username is blank")
	}
	var ui auth.UserInfo
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &ui); err != nil {
			return auth.UserInfo{}, protocol.Errorf(protocol.InvalidParameter, "decode user info: %v", err)
		}
	}
	ui.Username = name
	return ui, nil
}

// processCreateUser serves AUTH_CREATE_USER (3001; ext username; body
// UserInfo).
func (b *Broker) processCreateUser(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	ui, err := b.decodeUserInfo(req)
	if err != nil {
		return nil, err
	}
	u, err := ui.User()
	if err != nil {
		return nil, authError(err)
	}
	if u.Type == auth.UserSuper && b.callerIsNotSuper(req) {
		return nil, protocol.Errorf(protocol.SystemError, "The super user can only be create by super user")
	}
	if err := b.auth.store.CreateUser(u); err != nil {
		return nil, authError(err)
	}
	b.logger.Info("auth: user created", "username", u.Username, "userType", u.Type.String(), "by", req.Ext(auth.FieldAccessKey))
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processUpdateUser serves AUTH_UPDATE_USER (3002; ext username; body
// UserInfo with the fields to change).
func (b *Broker) processUpdateUser(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	ui, err := b.decodeUserInfo(req)
	if err != nil {
		return nil, err
	}
	up, err := ui.Update()
	if err != nil {
		return nil, authError(err)
	}
	if up.Type != nil && *up.Type == auth.UserSuper && b.callerIsNotSuper(req) {
		return nil, protocol.Errorf(protocol.SystemError, "The super user can only be update by super user")
	}
	if b.auth.store.IsSuper(ui.Username) && b.callerIsNotSuper(req) {
		return nil, protocol.Errorf(protocol.NoPermission, "The super user can only be update by super user")
	}
	if err := b.auth.store.UpdateUser(ui.Username, up); err != nil {
		return nil, authError(err)
	}
	b.logger.Info("auth: user updated", "username", ui.Username, "by", req.Ext(auth.FieldAccessKey))
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processDeleteUser serves AUTH_DELETE_USER (3003; ext username). The
// user's ACL goes with it; deleting an absent user succeeds.
func (b *Broker) processDeleteUser(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	name := req.Ext("username")
	if b.auth.store.IsSuper(name) && b.callerIsNotSuper(req) {
		return nil, protocol.Errorf(protocol.NoPermission, "The super user can only be update by super user")
	}
	if err := b.auth.store.DeleteUser(name); err != nil {
		return nil, authError(err)
	}
	b.logger.Info("auth: user deleted", "username", name, "by", req.Ext(auth.FieldAccessKey))
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processGetUser serves AUTH_GET_USER (3004; ext username): body UserInfo
// without the password, or no body when the user does not exist.
func (b *Broker) processGetUser(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	name := req.Ext("username")
	if strings.TrimSpace(name) == "" {
		return nil, protocol.Errorf(protocol.InvalidParameter, "The username is blank")
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	if u, ok := b.auth.store.User(name); ok {
		body, err := json.Marshal(auth.UserToInfo(u, false))
		if err != nil {
			return nil, err
		}
		resp.Body = body
	}
	return resp, nil
}

// processListUser serves AUTH_LIST_USER (3005; ext filter): body a JSON
// array of UserInfo without passwords (none when empty).
func (b *Broker) processListUser(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	users := b.auth.store.Users(req.Ext("filter"))
	resp := protocol.NewResponse(req, protocol.Success, "")
	if len(users) > 0 {
		infos := make([]auth.UserInfo, len(users))
		for i, u := range users {
			infos[i] = auth.UserToInfo(u, false)
		}
		body, err := json.Marshal(infos)
		if err != nil {
			return nil, err
		}
		resp.Body = body
	}
	return resp, nil
}

// processPutACL serves AUTH_CREATE_ACL (3006) and AUTH_UPDATE_ACL (3007;
// ext subject; body AclInfo): the entries are merged into the subject's
// ACL (new resources added, existing ones replaced).
func (b *Broker) processPutACL(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var ai auth.ACLInfo
	if err := json.Unmarshal(req.Body, &ai); err != nil || len(ai.Policies) == 0 {
		return nil, protocol.Errorf(protocol.NoPermission, "The body of acl is null")
	}
	if ai.Subject == "" {
		ai.Subject = req.Ext("subject")
	}
	acl, err := ai.ACL()
	if err != nil {
		return nil, authError(err)
	}
	if err := b.auth.store.PutACL(acl); err != nil {
		return nil, authError(err)
	}
	b.logger.Info("auth: acl changed", "subject", acl.Subject, "by", req.Ext(auth.FieldAccessKey))
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processDeleteACL serves AUTH_DELETE_ACL (3008; ext subject, policyType,
// resource): one entry, or the subject's whole ACL without a resource.
func (b *Broker) processDeleteACL(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	pt, err := auth.ParsePolicyType(req.Ext("policyType"))
	if err != nil {
		return nil, authError(err)
	}
	var res *auth.Resource
	if key := req.Ext("resource"); key != "" {
		r, err := auth.ParseResource(key)
		if err != nil {
			return nil, authError(err)
		}
		res = &r
	}
	if err := b.auth.store.DeleteACL(req.Ext("subject"), pt, res); err != nil {
		return nil, authError(err)
	}
	b.logger.Info("auth: acl deleted", "subject", req.Ext("subject"), "resource", req.Ext("resource"), "by", req.Ext(auth.FieldAccessKey))
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processGetACL serves AUTH_GET_ACL (3009; ext subject): body AclInfo, or
// none when the subject has no ACL.
func (b *Broker) processGetACL(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	acl, ok, err := b.auth.store.GetACL(req.Ext("subject"))
	if err != nil {
		return nil, authError(err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	if ok {
		if resp.Body, err = json.Marshal(auth.ACLToInfo(acl)); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// processListACL serves AUTH_LIST_ACL (3010; ext subjectFilter,
// resourceFilter): body a JSON array of AclInfo (none when empty).
func (b *Broker) processListACL(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	acls := b.auth.store.ListACLs(req.Ext("subjectFilter"), req.Ext("resourceFilter"))
	resp := protocol.NewResponse(req, protocol.Success, "")
	if len(acls) > 0 {
		infos := make([]auth.ACLInfo, len(acls))
		for i, a := range acls {
			infos[i] = auth.ACLToInfo(a)
		}
		body, err := json.Marshal(infos)
		if err != nil {
			return nil, err
		}
		resp.Body = body
	}
	return resp, nil
}

// processAuthExport serves AuthExportCode to the inner-client user only.
func (b *Broker) processAuthExport(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if b.auth.inner == nil {
		return nil, protocol.Errorf(protocol.NoPermission, "innerClientAuthenticationCredentials is not configured")
	}
	user, err := b.auth.verifier.AuthenticateRemoting(req)
	if err != nil {
		return nil, authError(err)
	}
	if user != b.auth.inner.AccessKey {
		return nil, protocol.Errorf(protocol.NoPermission, "User:%s may not copy the auth state", user)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = b.auth.store.Export()
	return resp, nil
}
