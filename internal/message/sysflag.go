package message

// Message sysFlag bits (docs/protocol.md §6.4, docs/broker.md §5.4). Part
// of the wire and on-disk format; never change.
const (
	SysFlagCompressed = 0x1
	SysFlagMultiTags  = 0x2

	SysFlagTransactionNotType      = 0x0
	SysFlagTransactionPreparedType = 0x4
	SysFlagTransactionCommitType   = 0x8
	SysFlagTransactionRollbackType = 0xC
	sysFlagTransactionMask         = 0xC

	SysFlagBornHostV6  = 0x10
	SysFlagStoreHostV6 = 0x20
	SysFlagNeedUnwrap  = 0x40
	SysFlagInnerBatch  = 0x80

	// Compression type in bits 8-10, meaningful only with SysFlagCompressed.
	// 0 means zlib (older producers and the Go client).
	SysFlagCompressionLZ4  = 0x100
	SysFlagCompressionZSTD = 0x200
	SysFlagCompressionZLIB = 0x300
	sysFlagCompressionMask = 0x700
)

// TransactionType returns the transaction bits of a sysFlag: one of
// SysFlagTransactionNotType, ...PreparedType, ...CommitType, ...RollbackType.
func TransactionType(sysFlag int32) int32 { return sysFlag & sysFlagTransactionMask }

// SetTransactionType replaces the transaction bits of sysFlag with typ.
func SetTransactionType(sysFlag, typ int32) int32 {
	return sysFlag&^sysFlagTransactionMask | typ&sysFlagTransactionMask
}

// CompressionType returns the compression-type bits (0x000..0x700) of a
// sysFlag; 0 and SysFlagCompressionZLIB both mean zlib.
func CompressionType(sysFlag int32) int32 { return sysFlag & sysFlagCompressionMask }

// IsZlibCompressed reports whether the body is compressed with zlib, the only
// algorithm this package can undo.
func IsZlibCompressed(sysFlag int32) bool {
	if sysFlag&SysFlagCompressed == 0 {
		return false
	}
	t := CompressionType(sysFlag)
	return t == 0 || t == SysFlagCompressionZLIB
}
