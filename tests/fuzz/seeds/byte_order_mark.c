#section support_code
int a;
#section code
x;
