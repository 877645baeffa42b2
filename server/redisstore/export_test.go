package redisstore

// RecordKey is recordKey, for tests that must know which node holds a
// record.
var RecordKey = recordKey
