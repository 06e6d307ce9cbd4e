module tare.dev/tests/sort

go 1.21

require tare.dev/worker v0.1.0

replace tare.dev/worker => ../../../../clients/go
