module tare.test/gobench

go 1.21
