module github.com/idemhq/idem/server/mysqlstore

go 1.25.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/idemhq/idem v0.1.0
	github.com/stretchr/testify v1.12.1
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
