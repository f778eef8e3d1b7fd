package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// gRPC metadata names of a signed 5.x request. Part of the wire protocol.
const (
	HeaderAuthorization = "authorization"
	HeaderDateTime      = "x-mq-date-time"
	// AlgorithmHMACSHA1 is the only scheme 5.x clients send.
	AlgorithmHMACSHA1 = "MQv2-HMAC-SHA1"
)

// GRPCCredential is a parsed authorization header:
//
//	MQv2-HMAC-SHA1 Credential=<AK>[/...], SignedHeaders=x-mq-date-time, Signature=<hex>
//
// The signature is HMAC-SHA1(key = secret key, data = the exact bytes of
// x-mq-date-time), in hex of either case.
type GRPCCredential struct {
	AccessKey string
	Signature []byte // decoded from hex; nil when the header has none
}

// ParseAuthorization parses an authorization header value as RocketMQ's
// proxy does: the algorithm name up to the first space, then
// comma-separated key=value items; Credential's part before the first '/'
// is the access key. Errors are *Error in RocketMQ's words.
func ParseAuthorization(value string) (GRPCCredential, error) {
	_, rest, ok := strings.Cut(value, " ")
	if !ok {
		return GRPCCredential{}, refusef("authentication header is incorrect.")
	}
	var c GRPCCredential
	for item := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return GRPCCredential{}, refusef("authentication keyValues length is incorrect, actual length=1.")
		}
		switch k {
		case "Credential":
			c.AccessKey, _, _ = strings.Cut(v, "/")
		case "Signature":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return GRPCCredential{}, refusef("create authentication context error.")
			}
			c.Signature = sig
		}
	}
	return c, nil
}

// AuthenticateGRPC verifies a 5.x request's authorization and
// x-mq-date-time values and returns the access key (the username).
func (v *Verifier) AuthenticateGRPC(authorization, dateTime string) (string, error) {
	if authorization == "" {
		return "", errNoUsername
	}
	if dateTime == "" {
		return "", refusef("datetime is null.")
	}
	c, err := ParseAuthorization(authorization)
	if err != nil {
		return "", err
	}
	if c.AccessKey == "" {
		return "", errNoUsername
	}
	u := v.store.snap.Load().users[c.AccessKey]
	if u == nil {
		return c.AccessKey, refusef("User:%s is not found.", c.AccessKey)
	}
	if u.user.Status == StatusDisable {
		return c.AccessKey, refusef("User:%s is disabled.", c.AccessKey)
	}
	if len(c.Signature) != sha1.Size {
		return c.AccessKey, errBadSignature
	}
	sc := v.scratch.Get().(*scratch)
	defer v.scratch.Put(sc)
	h := u.getMAC()
	defer u.putMAC(h)
	h.Write(stringBytes(dateTime))
	if !hmac.Equal(h.Sum(sc.sum[:0]), c.Signature) {
		return c.AccessKey, errBadSignature
	}
	return c.AccessKey, nil
}

// SignGRPC returns the authorization header value for dateTime, as the Go
// v5 client builds it.
func SignGRPC(accessKey, secretKey, dateTime string) string {
	h := hmac.New(sha1.New, []byte(secretKey))
	h.Write([]byte(dateTime))
	return AlgorithmHMACSHA1 + " Credential=" + accessKey + ", SignedHeaders=" + HeaderDateTime +
		", Signature=" + hex.EncodeToString(h.Sum(nil))
}
