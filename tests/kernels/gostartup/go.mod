module gostartup

go 1.21
