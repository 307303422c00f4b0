#section support_code
int a;

#section support_code

#section code
x;
