#include "s3/s3_errors.h"

static const struct {
    int status;
    const char *code;
    const char *message;
} error_table[] = {{200, "OK", ""},
#define S3E_ROW(name, status, code, msg) {status, code, msg},
                   S3_ERROR_TABLE(S3E_ROW)
#undef S3E_ROW
};

int s3_error_status(s3_error_t e)
{
    return error_table[e].status;
}

const char *s3_error_code(s3_error_t e)
{
    return error_table[e].code;
}

const char *s3_error_message(s3_error_t e)
{
    return error_table[e].message;
}
