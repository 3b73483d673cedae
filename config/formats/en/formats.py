"""Dates in the admin as the end user's pages write them (`config.pages.when`): "1 Dec 2026,
19:21", not Django's English default "Dec. 1, 2026, 7:21 p.m.", so support staff and users
read the same time the same way."""

DATE_FORMAT = "j M Y"
DATETIME_FORMAT = "j M Y, H:i"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "j M Y"
SHORT_DATETIME_FORMAT = "j M Y, H:i"
MONTH_DAY_FORMAT = "j M"
YEAR_MONTH_FORMAT = "M Y"
