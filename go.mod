module github.com/torchlean-go/torchlean

go 1.25.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/klauspost/cpuid/v2 v2.4.2
)

require golang.org/x/sys v0.41.0 // indirect
