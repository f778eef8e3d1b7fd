package message

import "errors"

// Sentinels callers branch on with errors.Is. Decoders wrap them with the
// position and the offending value.
var (
	// ErrShortBuffer: the record (or its header) extends past the end of the
	// buffer. At the end of a commit-log file's written region this is a torn
	// tail, not damage.
	ErrShortBuffer = errors.New("message: short buffer")

	// ErrBadMagic: the magic code is neither a message magic nor BlankMagic.
	// An all-zero header (never-written space) reports this too.
	ErrBadMagic = errors.New("message: bad magic code")

	// ErrBlank: the record is the end-of-file filler (BlankMagic). DecodeStored
	// returns it with n = the blank's TOTALSIZE, so a reader can skip to the
	// next file. It does not wrap ErrBadMagic.
	ErrBlank = errors.New("message: blank end-of-file record")

	// ErrBadCRC: BODYCRC does not match the body (DecodeOptions.VerifyCRC).
	ErrBadCRC = errors.New("message: body crc mismatch")

	// ErrCorrupt: lengths inside a record are inconsistent with each other or
	// with TOTALSIZE.
	ErrCorrupt = errors.New("message: corrupt record")

	// ErrPropertiesTooLarge: the properties string exceeds MaxPropertiesSize
	// bytes. The store answers PROPERTIES_SIZE_EXCEEDED.
	ErrPropertiesTooLarge = errors.New("message: properties too large")

	// ErrBodyTooLarge: the body (or the whole record, or a decompressed body)
	// exceeds its limit. The store answers MESSAGE_ILLEGAL.
	ErrBodyTooLarge = errors.New("message: body too large")

	// ErrTopicTooLong: the topic does not fit the stored layout (more than
	// MaxTopicSize bytes).
	ErrTopicTooLong = errors.New("message: topic too long")

	// ErrBadMsgID: a message id string is not a valid offset or unique id.
	ErrBadMsgID = errors.New("message: bad message id")
)
