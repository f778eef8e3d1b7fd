package broker

import (
	"context"
	"strconv"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processUpdateGroup serves UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200; body
// SubscriptionGroupConfig JSON).
func (b *Broker) processUpdateGroup(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	cfg := protocol.NewSubscriptionGroupConfig("")
	if err := protocol.UnmarshalFastJSON(req.Body, &cfg); err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	if err := b.updateGroup(cfg); err != nil {
		return nil, err
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processUpdateGroupList serves UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
// (225; body {"groupConfigList":[...]}).
func (b *Broker) processUpdateGroupList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var body protocol.SubscriptionGroupList
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	for _, g := range body.GroupConfigList {
		if err := b.updateGroup(g); err != nil {
			return nil, err
		}
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

func (b *Broker) updateGroup(cfg protocol.SubscriptionGroupConfig) error {
	if err := names.ValidateGroup(cfg.GroupName); err != nil {
		return protocol.Errorf(protocol.InvalidParameter, "%s", err)
	}
	if err := b.Groups.Update(cfg); err != nil {
		return protocol.Errorf(protocol.SystemError, "persist subscription group: %v", err)
	}
	return nil
}

// processGetAllGroups serves GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): body
// SubscriptionGroupWrapper (standard JSON; the Go admin decodes it
// strictly), ext totalGroupNum.
func (b *Broker) processGetAllGroups(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	w := b.Groups.Wrapper()
	body, err := protocol.MarshalJSON(w)
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	resp.SetExt("totalGroupNum", strconv.Itoa(len(w.SubscriptionGroupTable)))
	return resp, nil
}

// processGetGroup serves GET_SUBSCRIPTIONGROUP_CONFIG (352; group).
func (b *Broker) processGetGroup(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GroupHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	g, ok, _ := b.Groups.FindOrCreate(h.Group, b.dyn.autoCreateGroup.Load())
	if !ok {
		return nil, protocol.Errorf(protocol.SubscriptionGroupNotExist, "No group in this broker. group: %s", h.Group)
	}
	body, err := protocol.MarshalJSON(&g)
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// processDeleteGroup serves DELETE_SUBSCRIPTIONGROUP (207; groupName,
// cleanOffset).
func (b *Broker) processDeleteGroup(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.DeleteSubscriptionGroupRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if _, err := b.Groups.Delete(h.GroupName); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	popRetry, err := b.dropPopGroup(h.GroupName) // pop_drop.go
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	if h.CleanOffset {
		b.Offsets.RemoveGroup(h.GroupName)
		topics := append([]string{names.RetryTopic(h.GroupName), names.DLQTopic(h.GroupName)}, popRetry...)
		if err := b.deleteTopics(topics); err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "%v", err)
		}
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processGetAllConsumerOffset serves GET_ALL_CONSUMER_OFFSET (43, slaves).
func (b *Broker) processGetAllConsumerOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	body, err := protocol.MarshalJSON(b.Offsets.Wrapper())
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// processGetAllDelayOffset serves GET_ALL_DELAY_OFFSET (45, slaves).
func (b *Broker) processGetAllDelayOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	body, err := protocol.MarshalJSON(b.DelayOffsets.Wrapper())
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// groupForbiddenHeader is UPDATE_AND_GET_GROUP_FORBIDDEN's header; readable
// absent only reads.
type groupForbiddenHeader struct {
	Group    string `ext:"group,req"`
	Topic    string `ext:"topic,req"`
	Readable *bool  `ext:"readable"`
}

// processGroupForbidden serves UPDATE_AND_GET_GROUP_FORBIDDEN (353) as
// RocketMQ does: with readable, forbid (false) or allow (true) the group
// reading the topic; the body is the state after ({"group","readable",
// "topic"}). A forbidden group's pulls without a posted subscription are
// refused NO_PERMISSION with forbiddenType 5 (pull.go). Neither the group
// nor the topic has to exist.
func (b *Broker) processGroupForbidden(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h groupForbiddenHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if h.Readable != nil {
		if err := b.Groups.SetForbidden(h.Group, h.Topic, permIndexRead, !*h.Readable); err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "persist group forbidden: %v", err)
		}
	}
	body, err := protocol.MarshalJSON(&protocol.GroupForbidden{
		Group: h.Group, Topic: h.Topic, Readable: !b.Groups.Forbidden(h.Group, h.Topic, permIndexRead),
	})
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}
