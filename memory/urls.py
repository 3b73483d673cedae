app_name = "memory_api"
urlpatterns: list = []
