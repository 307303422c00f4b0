PYTENSOR_SUPPORT_CODE_SECTION
int s;
#section code
x;
