app_name = "conversations_api"
urlpatterns: list = []
