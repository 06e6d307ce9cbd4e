module tare.dev/worker

go 1.21
