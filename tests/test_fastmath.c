/* test_fastmath.c — fl_expf against double-precision exp: the error bound its header states. */
#include "common/fastmath.h"
#include "test.h"

TEST(fastmath_expf_error_bound) {
    double worst = 0;
    for (float x = -87.0f; x < 88.5f; x += 0.000731f) {
        double e = exp((double)x), rel = fabs(fl_expf(x) - e) / e;
        worst = rel > worst ? rel : worst;
    }
    CHECK_MSG(worst <= 2.5e-7, "max relative error %.3g", worst);
    CHECK(fl_expf(0.0f) == 1.0f);
    CHECK(fl_expf(-1000.0f) == 0.0f);
    CHECK(fl_expf(1000.0f) > 3e38f);
}
