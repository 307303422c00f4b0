#section support_code
#define MOVED(m) (m)
